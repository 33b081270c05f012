module chanflow.dev/bench/peers/go

go 1.19

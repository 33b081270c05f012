blocks {
  idx: 0
  parent_idx: -1
  vars {
    name: "ch"
    type {
      type: CHANNEL
      channel {
        data_type: INT64
        capacity: 0
      }
    }
  }
  vars {
    name: "r"
    type {
      type: LOD_TENSOR
      lod_tensor {
        tensor {
          data_type: INT64
        }
      }
    }
  }
  vars {
    name: "ok"
    type {
      type: LOD_TENSOR
      lod_tensor {
        tensor {
          data_type: BOOL
        }
      }
    }
  }
  ops {
    outputs {
      parameter: "Out"
      arguments: "ch"
    }
    type: "channel_create"
    attrs {
      name: "data_type"
      type: INT
      i: 3
    }
    attrs {
      name: "capacity"
      type: INT
      i: 0
    }
  }
  ops {
    inputs {
      parameter: "X"
      arguments: "ch"
    }
    type: "go"
    attrs {
      name: "sub_block"
      type: BLOCK
      block_idx: 1
    }
  }
  ops {
    inputs {
      parameter: "Channel"
      arguments: "ch"
    }
    outputs {
      parameter: "Out"
      arguments: "r"
    }
    outputs {
      parameter: "Status"
      arguments: "ok"
    }
    type: "channel_recv"
  }
}
blocks {
  idx: 1
  parent_idx: 0
  vars {
    name: "v"
    type {
      type: LOD_TENSOR
      lod_tensor {
        tensor {
          data_type: INT64
        }
      }
    }
  }
  ops {
    outputs {
      parameter: "Out"
      arguments: "v"
    }
    type: "fill_constant"
    attrs {
      name: "force_cpu"
      type: BOOLEAN
      b: false
    }
    attrs {
      name: "value"
      type: FLOAT
      f: 99.0
    }
    attrs {
      name: "shape"
      type: INTS
      ints: 1
    }
    attrs {
      name: "dtype"
      type: INT
      i: 3
    }
  }
  ops {
    inputs {
      parameter: "Channel"
      arguments: "ch"
    }
    inputs {
      parameter: "X"
      arguments: "v"
    }
    type: "channel_send"
  }
}

// runtime.h — the CSP runtime layer: green threads, channels, select, timers, contexts, sync.
//
//   #include <chanflow/runtime.h>
//   namespace cf = chanflow;
//   auto ch = cf::make_chan<int>();
//   cf::go([ch] { ch.send(42); });
//   int v = *ch.recv();
#pragma once

#include "chanflow/core.h"
#include "chanflow/runtime/chan.h"
#include "chanflow/runtime/channel.h"
#include "chanflow/runtime/context.h"
#include "chanflow/runtime/external_waiter.h"
#include "chanflow/runtime/functions.h"
#include "chanflow/runtime/group.h"
#include "chanflow/runtime/mutex.h"
#include "chanflow/runtime/scheduler.h"
#include "chanflow/runtime/select.h"
#include "chanflow/runtime/timer.h"
#include "chanflow/runtime/trace.h"
#include "chanflow/runtime/wait_group.h"
#include "chanflow/runtime/work_sharing.h"

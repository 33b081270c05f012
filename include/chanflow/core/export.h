// export.h — CHANFLOW_API marks the symbols a chanflow library exports.
//
// Layers are built with hidden visibility; only declarations marked CHANFLOW_API are part of the
// binary interface. Static builds (the default) define CHANFLOW_STATIC and the macro is empty.
#pragma once

#if defined(CHANFLOW_STATIC)
#define CHANFLOW_API
#elif defined(CHANFLOW_BUILDING_LIBRARY)
#define CHANFLOW_API __attribute__((visibility("default")))
#else
#define CHANFLOW_API
#endif

/* Stands in for glibc's <sys/single_threaded.h> (glibc 2.32 and later) when the
   adapters are built to run on glibc 2.28 (build.rs, NIXL_ADAPTERS_GLIBC_2_28_LINKER).
   libstdc++'s headers read `__libc_single_threaded` to skip atomic reference
   counts in a single-threaded process; glibc 2.28 has no such variable. Here it
   is a constant 0 of this library's own, "more than one thread", so reference
   counts are always atomic: correct in every process, as on older glibc. */
#ifndef NIXL_ADAPTERS_SINGLE_THREADED_H
#define NIXL_ADAPTERS_SINGLE_THREADED_H
static const char __libc_single_threaded = 0;
#endif

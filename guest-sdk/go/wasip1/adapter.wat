;; The WASI preview 1 that Go's runtime imports (module `wasi_snapshot_preview1`), served with
;; what a wink plugin has: the clocks, randomness and the log. Standard output and error go to
;; the log; every other call (files, sockets, descriptors) is refused, as WASI's EBADF or
;; ENOTCAPABLE; exiting traps; there are no arguments and no environment variables.
;;
;; Not the standard adapter: it keeps its state in the main module's memory (allocated through
;; `cabi_realloc` or `memory.grow`), which Go's runtime, initialising, cannot give it: Go's
;; exports may not be called before its runtime is up, and Go's allocator assumes it alone grows
;; the memory. This one keeps no state and allocates nothing.
(module
  (import "env" "memory" (memory 0))
  (import "wasi:clocks/wall-clock@0.2.0" "now" (func $wall_now (param i32)))
  (import "wasi:clocks/monotonic-clock@0.2.0" "now" (func $monotonic_now (result i64)))
  (import "wasi:random/random@0.2.0" "get-random-u64" (func $random_u64 (result i64)))
  (import "wink:plugin/log@0.4.0" "log" (func $log (param i32 i32 i32)))

  ;; errno values
  (global $EBADF i32 (i32.const 8))
  (global $EINVAL i32 (i32.const 28))
  (global $ENOTCAPABLE i32 (i32.const 76))

  (func (export "clock_time_get") (param $id i32) (param $precision i64) (param $out i32) (result i32)
    (local $saved i64) (local $nanos i64)
    (if (i32.eq (local.get $id) (i32.const 1))
      (then
        (i64.store (local.get $out) (call $monotonic_now))
        (return (i32.const 0))))
    (if (i32.eqz (local.get $id))
      (then
        ;; wall-clock's datetime is 16 bytes; `out` holds 8: borrow the next 8 and restore them.
        (local.set $saved (i64.load offset=8 (local.get $out)))
        (call $wall_now (local.get $out))
        (local.set $nanos
          (i64.add
            (i64.mul (i64.load (local.get $out)) (i64.const 1000000000))
            (i64.extend_i32_u (i32.load offset=8 (local.get $out)))))
        (i64.store offset=8 (local.get $out) (local.get $saved))
        (i64.store (local.get $out) (local.get $nanos))
        (return (i32.const 0))))
    (global.get $EINVAL))

  (func (export "random_get") (param $buf i32) (param $len i32) (result i32)
    (local $bits i64)
    (block $whole
      (loop $words
        (br_if $whole (i32.lt_u (local.get $len) (i32.const 8)))
        (i64.store align=1 (local.get $buf) (call $random_u64))
        (local.set $buf (i32.add (local.get $buf) (i32.const 8)))
        (local.set $len (i32.sub (local.get $len) (i32.const 8)))
        (br $words)))
    (local.set $bits (call $random_u64))
    (block $done
      (loop $bytes
        (br_if $done (i32.eqz (local.get $len)))
        (i32.store8 (local.get $buf) (i32.wrap_i64 (local.get $bits)))
        (local.set $bits (i64.shr_u (local.get $bits) (i64.const 8)))
        (local.set $buf (i32.add (local.get $buf) (i32.const 1)))
        (local.set $len (i32.sub (local.get $len) (i32.const 1)))
        (br $bytes)))
    (i32.const 0))

  ;; Standard output is logged at `info`, standard error at `warn`, one record per write.
  (func (export "fd_write") (param $fd i32) (param $iovs i32) (param $count i32) (param $written i32) (result i32)
    (local $level i32) (local $total i32) (local $len i32)
    (if (i32.eq (local.get $fd) (i32.const 1)) (then (local.set $level (i32.const 2))))
    (if (i32.eq (local.get $fd) (i32.const 2)) (then (local.set $level (i32.const 3))))
    (if (i32.eqz (local.get $level)) (then (return (global.get $EBADF))))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $count)))
        (local.set $len (i32.load offset=4 (local.get $iovs)))
        (if (local.get $len)
          (then (call $log (local.get $level) (i32.load (local.get $iovs)) (local.get $len))))
        (local.set $total (i32.add (local.get $total) (local.get $len)))
        (local.set $iovs (i32.add (local.get $iovs) (i32.const 8)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $next)))
    (i32.store (local.get $written) (local.get $total))
    (i32.const 0))

  ;; No arguments and no environment.
  (func $no_strings (param $count i32) (param $size i32) (result i32)
    (i32.store (local.get $count) (i32.const 0))
    (i32.store (local.get $size) (i32.const 0))
    (i32.const 0))
  (func (export "args_sizes_get") (param i32 i32) (result i32) (call $no_strings (local.get 0) (local.get 1)))
  (func (export "environ_sizes_get") (param i32 i32) (result i32) (call $no_strings (local.get 0) (local.get 1)))
  (func (export "args_get") (param i32 i32) (result i32) (i32.const 0))
  (func (export "environ_get") (param i32 i32) (result i32) (i32.const 0))

  (func (export "sched_yield") (result i32) (i32.const 0))
  ;; Every subscription is answered at once: a clock's as if its time had come (Go's runtime
  ;; looks at its timers again and polls anew while they are not due, so a sleep spins on the
  ;; clock and counts against the call's CPU time; its own short sleeps, in loops that wait for
  ;; threads a plugin does not have, pass at once), a descriptor's with EBADF.
  ;; A subscription is 48 bytes (userdata @0, tag @8); an event 32 (userdata @0, error @8,
  ;; type @10).
  (func (export "poll_oneoff") (param $in i32) (param $out i32) (param $count i32) (param $events i32) (result i32)
    (local $tag i32)
    (i32.store (local.get $events) (local.get $count))
    (block $done
      (loop $next
        (br_if $done (i32.eqz (local.get $count)))
        (local.set $tag (i32.load8_u offset=8 (local.get $in)))
        (i64.store (local.get $out) (i64.load (local.get $in)))
        (i32.store16 offset=8 (local.get $out) (select (i32.const 0) (global.get $EBADF) (i32.eqz (local.get $tag))))
        (i32.store8 offset=10 (local.get $out) (local.get $tag))
        (i64.store offset=16 (local.get $out) (i64.const 0))
        (i32.store16 offset=24 (local.get $out) (i32.const 0))
        (local.set $in (i32.add (local.get $in) (i32.const 48)))
        (local.set $out (i32.add (local.get $out) (i32.const 32)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $next)))
    (i32.const 0))
  (func (export "proc_exit") (param i32) (unreachable))

  ;; No descriptors: no preopened directories, stdio flags unchangeable.
  (func (export "fd_prestat_get") (param i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_prestat_dir_name") (param i32 i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_fdstat_get") (param i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_fdstat_set_flags") (param i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_fdstat_set_rights") (param i32 i64 i64) (result i32) (global.get $EBADF))
  (func (export "fd_close") (param i32) (result i32) (global.get $EBADF))
  (func (export "fd_filestat_get") (param i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_filestat_set_size") (param i32 i64) (result i32) (global.get $EBADF))
  (func (export "fd_pread") (param i32 i32 i32 i64 i32) (result i32) (global.get $EBADF))
  (func (export "fd_pwrite") (param i32 i32 i32 i64 i32) (result i32) (global.get $EBADF))
  (func (export "fd_read") (param i32 i32 i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_readdir") (param i32 i32 i32 i64 i32) (result i32) (global.get $EBADF))
  (func (export "fd_seek") (param i32 i64 i32 i32) (result i32) (global.get $EBADF))
  (func (export "fd_sync") (param i32) (result i32) (global.get $EBADF))

  ;; No files and no sockets.
  (func (export "path_create_directory") (param i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_filestat_get") (param i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_filestat_set_times") (param i32 i32 i32 i32 i64 i64 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_link") (param i32 i32 i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_open") (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_readlink") (param i32 i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_remove_directory") (param i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_rename") (param i32 i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_symlink") (param i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "path_unlink_file") (param i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "sock_accept") (param i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "sock_recv") (param i32 i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "sock_send") (param i32 i32 i32 i32 i32) (result i32) (global.get $ENOTCAPABLE))
  (func (export "sock_shutdown") (param i32 i32) (result i32) (global.get $ENOTCAPABLE))
)

//! Frees the blocking-pool threads that calls cut at their deadline leave behind in `open(2)`.
//!
//! WASI's file operations run on the call runtime's blocking pool. Dropping a call at its
//! deadline cannot cancel a pool task that is already running, and on Linux the one file
//! operation that waits without bound is opening a FIFO that has no writer (reads go through
//! `pread`, which a FIFO refuses at once). Left alone, each such call would keep a thread
//! until someone writes to the FIFO, and a handful of calls would take the whole pool, and
//! with it every plugin's file access.
//!
//! So the pool's threads are known by thread ID, and when a call is dropped while it waits in
//! WASI, every thread of this pool then inside `open`/`openat`/`openat2` gets a signal whose
//! handler does nothing and is installed without `SA_RESTART`: the kernel ends the wait with
//! `EINTR`, which cap-std and WASI pass to the guest as `interrupted`, and the thread returns
//! to the pool. An open of a regular file is not interruptible and is left as it is, so only
//! opens that wait on another party (FIFOs, some devices) are affected, including, rarely,
//! another plugin's that was still within its own deadline; it sees `interrupted`.
//!
//! `tgkill` and `sigaction` go through `libc`, as rustix has them only in its hidden `runtime`
//! module for libc implementations (and as `unsafe` there too), so the two functions that call
//! them allow `unsafe`.

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

/// `open` (2), `openat` (257) and `openat2` (437) on x86_64; the numbers
/// `/proc/self/task/<tid>/syscall` starts with.
#[cfg(target_arch = "x86_64")]
const OPEN_SYSCALLS: &[i64] = &[2, 257, 437];
/// `openat` (56) and `openat2` (437) on aarch64.
#[cfg(target_arch = "aarch64")]
const OPEN_SYSCALLS: &[i64] = &[56, 437];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const OPEN_SYSCALLS: &[i64] = &[];

/// The threads of one call runtime's blocking pool, by Linux thread ID.
#[derive(Default)]
pub(crate) struct PoolThreads {
    tids: Mutex<HashSet<i32>>,
}

impl PoolThreads {
    /// Records the calling thread; for the runtime's `on_thread_start`.
    pub(crate) fn started(&self) {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        self.tids.lock().insert(tid);
    }

    /// Forgets the calling thread; for the runtime's `on_thread_stop`. Takes the same lock as
    /// [`Self::interrupt_opens`], so a thread is never signalled after it has gone.
    pub(crate) fn stopped(&self) {
        let tid = rustix::thread::gettid().as_raw_nonzero().get();
        self.tids.lock().remove(&tid);
    }

    /// Interrupts every thread of the pool now waiting in an open; returns how many.
    #[allow(unsafe_code)]
    pub(crate) fn interrupt_opens(&self) -> usize {
        let Some(signal) = interrupt_signal() else {
            return 0;
        };
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let tids = self.tids.lock();
        let mut interrupted = 0;
        for &tid in tids.iter() {
            if !in_open(tid) {
                continue;
            }
            // SAFETY: tgkill only queues a signal for thread `tid` of this process; `tid` is a
            // live pool thread (it leaves the set under this lock before it exits), and the
            // signal's handler, installed by `interrupt_signal`, does nothing.
            let sent = unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, signal) };
            if sent == 0 {
                interrupted += 1;
            }
        }
        interrupted
    }
}

/// Hooks for the runtime builder: `(on_thread_start, on_thread_stop)`.
pub(crate) fn hooks(
    threads: &Arc<PoolThreads>,
) -> (
    impl Fn() + Send + Sync + 'static,
    impl Fn() + Send + Sync + 'static,
) {
    let (start, stop) = (threads.clone(), threads.clone());
    (move || start.started(), move || stop.stopped())
}

/// Whether thread `tid` of this process is inside an open system call.
fn in_open(tid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .ok()
        .and_then(|line| line.split(' ').next()?.trim().parse::<i64>().ok())
        .is_some_and(|number| OPEN_SYSCALLS.contains(&number))
}

/// The real-time signal that interrupts an open, its no-op handler installed once for the
/// process; `None` if it could not be installed (then nothing is signalled).
#[allow(unsafe_code)]
fn interrupt_signal() -> Option<i32> {
    static SIGNAL: OnceLock<Option<i32>> = OnceLock::new();
    *SIGNAL.get_or_init(|| {
        // glibc keeps the first real-time signals for itself and SIGRTMIN() starts after them;
        // neither wasmtime (SIGSEGV, SIGILL, SIGFPE, SIGBUS) nor tokio uses this one.
        let signal = libc::SIGRTMIN() + 3;
        extern "C" fn ignore(_: libc::c_int) {}
        // SAFETY: a zeroed sigaction is a valid value (no flags, empty mask) and the handler
        // is an `extern "C"` function that touches nothing, so it is async-signal-safe. No
        // SA_RESTART: the point is that the interrupted open returns EINTR.
        let installed = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
        };
        if !installed {
            tracing::warn!(
                signal,
                "cannot install the handler that frees plugin file opens stuck past their deadline"
            );
        }
        installed.then_some(signal)
    })
}

//! The wasmtime engines plugins share, the on-disk cache of compiled components, the epoch
//! ticker that turns wall-clock deadlines into interrupts, and the runtime plugin calls run on.
//!
//! A deadline has two halves. A guest running Wasm is stopped by the epoch: the ticker makes
//! its store's epoch deadline trap. A guest blocked in a host call of WASI (a sleep, a
//! `poll`, a read of a FIFO in a granted directory) runs no Wasm, so no epoch check is
//! reached. Calls therefore run as futures (wasmtime's async calls, WASI's async host side),
//! each bounded by a `tokio::time::timeout` of the same deadline once it waits in WASI
//! ([`PluginEngine::run_until`]): when it fires the call's future is dropped, which wasmtime turns into a trap unwinding
//! the guest's fiber, and the instance is thrown away as after any trap. The future is polled
//! on the calling (blocking) thread itself; the engine's own one-thread runtime only drives
//! the timers and WASI's blocking-I/O pool, so a call never depends on the caller's runtime.
//!
//! Fuel metering is a compile-time setting of an engine and costs every call of every plugin
//! compiled with it (about 16 % of a 110-pod ranking), so there are two engines: a metered one
//! for plugins whose limits name `fuel`, and an unmetered one for the rest, which the epoch
//! deadline and memory cap still bound.

mod blocked_open;
mod cache;

use blocked_open::PoolThreads;
use cache::{private_dir, read_verified, write_verified};
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// One epoch tick; deadlines are counted in ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Why a component could not be compiled or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The component file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a component wasmtime accepts.
    #[error("{path} is not a valid component: {source:#}")]
    Invalid {
        /// The component file.
        path: PathBuf,
        /// wasmtime's complaint.
        #[source]
        source: wasmtime::Error,
    },
}

/// The engines could not be built (an unsupported setting, or no thread for the ticker).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// wasmtime refused the engine configuration.
    #[error("{0:#}")]
    Config(#[source] wasmtime::Error),
    /// The thread that ticks the epoch could not be spawned.
    #[error("cannot start the epoch ticker: {0}")]
    Ticker(#[source] std::io::Error),
    /// The runtime behind plugin calls' timers and blocking I/O could not be built.
    #[error("cannot start the plugin call runtime: {0}")]
    CallRuntime(#[source] std::io::Error),
}

/// The shared engines plus their compile cache.
#[derive(Clone)]
pub struct PluginEngine {
    metered: Flavour,
    unmetered: Flavour,
    cache_dir: Option<PathBuf>,
    ticker: Arc<EpochTicker>,
    runtime: Arc<CallRuntime>,
}

/// The runtime behind plugin calls' timers and WASI's blocking I/O. Shut down in the
/// background when the last engine goes: dropping a runtime must not block, as the last
/// engine may be dropped on an async executor.
struct CallRuntime(Option<tokio::runtime::Runtime>, Arc<PoolThreads>);

impl Drop for CallRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// One engine and the key that keeps its cache entries apart from other engines' (other
/// wasmtime versions or settings).
#[derive(Clone)]
struct Flavour {
    engine: Engine,
    /// The engine's configuration, for the short-lived engines that compile for it.
    config: Config,
    cache_key: String,
}

impl Flavour {
    fn new(fuel: bool) -> wasmtime::Result<Self> {
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            // Component-model async is not used: its support costs every call.
            .concurrency_support(false)
            .epoch_interruption(true)
            .consume_fuel(fuel);
        let engine = Engine::new(&config)?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let cache_key = format!("{:016x}", hasher.finish());
        Ok(Self {
            engine,
            config,
            cache_key,
        })
    }

    /// Compiles `bytes` with an engine of this configuration that lives for this compile only,
    /// and returns the artifact [`Component::deserialize`] loads into [`Flavour::engine`]. An
    /// engine keeps cranelift's working state for reuse, several MiB a flavour; a compile is
    /// rare (start, a new plugin version), so that state goes with the short-lived engine
    /// instead of staying resident in the node.
    fn compile(&self, bytes: &[u8]) -> wasmtime::Result<Vec<u8>> {
        Engine::new(&self.config)?.precompile_component(bytes)
    }
}

/// Increments the engine's epoch from its own OS thread (a tokio task could be starved by
/// the very plugin it must interrupt), but only while a call runs: an idle node pays nothing.
struct EpochTicker {
    active_calls: AtomicUsize,
    thread: std::thread::Thread,
}

/// Keeps the epoch ticking while a plugin call is in progress.
pub(crate) struct CallGuard(Arc<EpochTicker>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.active_calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The sha256 of a component's bytes, as plugin configs pin it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl PluginEngine {
    /// The engines for plugins; `cache_dir` keeps compiled components across restarts.
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, EngineError> {
        let metered = Flavour::new(true).map_err(EngineError::Config)?;
        let unmetered = Flavour::new(false).map_err(EngineError::Config)?;
        let ticking = [metered.engine.weak(), unmetered.engine.weak()];
        let (ticker_tx, ticker_rx) = std::sync::mpsc::channel::<Weak<EpochTicker>>();
        let thread = std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                let Ok(ticker) = ticker_rx.recv() else { return };
                loop {
                    let Some(state) = ticker.upgrade() else {
                        return;
                    };
                    let active = state.active_calls.load(Ordering::Acquire) > 0;
                    drop(state);
                    if !active {
                        std::thread::park_timeout(Duration::from_secs(1));
                        continue;
                    }
                    std::thread::sleep(EPOCH_TICK);
                    for engine in &ticking {
                        match engine.upgrade() {
                            Some(engine) => engine.increment_epoch(),
                            None => return,
                        }
                    }
                }
            })
            .map_err(EngineError::Ticker)?;
        let ticker = Arc::new(EpochTicker {
            active_calls: AtomicUsize::new(0),
            thread: thread.thread().clone(),
        });
        let _ = ticker_tx.send(Arc::downgrade(&ticker));
        let pool_threads = Arc::new(PoolThreads::default());
        let (on_start, on_stop) = blocked_open::hooks(&pool_threads);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_start(on_start)
            .on_thread_stop(on_stop)
            // Each thread is held at most until its call's deadline (`blocked_open`), so this
            // bounds how many plugin calls may wait in a file operation at one moment; threads
            // are made on demand and leave after 10 s idle.
            .max_blocking_threads(64)
            .thread_name("wasm-call")
            .enable_time()
            .enable_io()
            .build()
            .map_err(EngineError::CallRuntime)?;
        let cache_dir = cache_dir.filter(|dir| match private_dir(dir) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(cache = %dir.display(), %error, "compile cache disabled: its directory cannot be made private to this user");
                false
            }
        });
        Ok(Self {
            metered,
            unmetered,
            cache_dir,
            ticker,
            runtime: Arc::new(CallRuntime(Some(runtime), pool_threads)),
        })
    }

    /// Runs one plugin call's future on this thread until it completes or `deadline` passes;
    /// `None` when the deadline passed, the future then dropped (a wasmtime call so dropped
    /// unwinds its guest as a trap would). Blocks: call it off the async executor. It does
    /// not use the caller's runtime, so it neither panics inside one nor needs one.
    ///
    /// The future is polled once before any timer exists: a call that never waits in WASI
    /// (nearly all of them) completes in that poll, the epoch deadline bounding its Wasm.
    /// `tokio::time::timeout` would not register its timer for such a call either (it polls
    /// the inner future first), but building it (the runtime handle, a clock reading) and
    /// `block_on`'s own set-up are skipped too; the bulk of a call's fixed cost is wasmtime's
    /// (a fiber per async call), not this. Only a call still pending after its first poll
    /// (blocked in a WASI host call, where no epoch check is reached) gets the timer, for the
    /// time left to its deadline.
    pub(crate) fn run_until<F: std::future::Future>(
        &self,
        deadline: Instant,
        future: F,
    ) -> Option<F::Output> {
        let runtime = self.runtime.0.as_ref()?;
        // WASI's futures find their timers and blocking pool through the current runtime.
        let _entered = runtime.enter();
        let mut future = std::pin::pin!(future);
        // A no-op waker: whatever the call waits on now is polled again below, with
        // `block_on`'s waker, before this thread sleeps.
        let mut first = Context::from_waker(Waker::noop());
        if let Poll::Ready(output) = future.as_mut().poll(&mut first) {
            return Some(output);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let output = futures_executor::block_on(tokio::time::timeout(left, future)).ok();
        if output.is_none() {
            // The call is dropped; a file open it was waiting on is not (`blocked_open`).
            let interrupted = self.runtime.1.interrupt_opens();
            if interrupted > 0 {
                tracing::debug!(
                    interrupted,
                    "interrupted file opens a plugin call left waiting at its deadline"
                );
            }
        }
        output
    }

    /// Runs a registry request (`oci`) to completion on this thread, its I/O driven by the
    /// engine's runtime; `None` only when the runtime is gone. Blocks: call it off the async
    /// executor, as plugin loads are.
    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> Option<F::Output> {
        let runtime = self.runtime.0.as_ref()?;
        Some(runtime.handle().block_on(future))
    }

    /// Marks a call in progress until the guard drops, so epoch deadlines fire.
    pub(crate) fn begin_call(&self) -> CallGuard {
        if self.ticker.active_calls.fetch_add(1, Ordering::AcqRel) == 0 {
            self.ticker.thread.unpark();
        }
        CallGuard(self.ticker.clone())
    }

    fn flavour(&self, metered: bool) -> &Flavour {
        if metered {
            &self.metered
        } else {
            &self.unmetered
        }
    }

    fn cache_path(&self, flavour: &Flavour, sha256: &str) -> Option<PathBuf> {
        self.cache_dir
            .as_ref()
            .map(|dir| dir.join(format!("{sha256}-{}.cwasm", flavour.cache_key)))
    }

    /// Compiles `bytes` (read from `path`) for the metered engine (a plugin with a `fuel`
    /// limit) or the unmetered one, or loads this host's earlier compilation of the same bytes
    /// from the cache. Stores for the component come from `component.engine()`.
    // Loading a precompiled artifact is `unsafe` in wasmtime: it runs the machine code as is.
    #[allow(unsafe_code)]
    pub(crate) fn load(
        &self,
        path: &Path,
        bytes: &[u8],
        sha256: &str,
        metered: bool,
    ) -> Result<Component, CompileError> {
        let flavour = self.flavour(metered);
        if let Some(cached) = self.cache_path(flavour, sha256).filter(|p| p.exists()) {
            match read_verified(&cached) {
                // SAFETY: these bytes are, digest for digest, an artifact this host wrote with
                // `serialize` for this engine configuration (the file name carries the
                // engine's compatibility hash; wasmtime checks the header too), read once into
                // memory so nothing can change them between the check and the load.
                Ok(artifact) => match unsafe { Component::deserialize(&flavour.engine, &artifact) }
                {
                    Ok(component) => return Ok(component),
                    Err(error) => {
                        tracing::warn!(cache = %cached.display(), %error, "ignoring unusable compile cache entry; recompiling")
                    }
                },
                Err(error) => {
                    tracing::warn!(cache = %cached.display(), %error, "compile cache entry not trusted (not this user's, writable by others, or not the digest recorded when it was written); recompiling from the .wasm")
                }
            }
        }
        let compiled = flavour.compile(bytes);
        release_freed_heap();
        let invalid = |source| CompileError::Invalid {
            path: path.to_path_buf(),
            source,
        };
        let artifact = compiled.map_err(invalid)?;
        // SAFETY: `artifact` was produced a moment ago, in this process, by an engine of this
        // flavour's very configuration, and is not shared with anything that could change it.
        let component =
            unsafe { Component::deserialize(&flavour.engine, &artifact) }.map_err(invalid)?;
        if let Some(cached) = self.cache_path(flavour, sha256) {
            if let Err(error) = write_verified(&cached, &artifact) {
                tracing::warn!(cache = %cached.display(), %error, "cannot write the compile cache");
            }
        }
        Ok(component)
    }

    /// Compiles `bytes` for the metered or unmetered engine, or finds them in the cache, and drops
    /// the result: warms the cache, and measures compiling and loading.
    pub fn compile(
        &self,
        path: &Path,
        bytes: &[u8],
        sha256: &str,
        metered: bool,
    ) -> Result<(), CompileError> {
        self.load(path, bytes, sha256, metered).map(drop)
    }

    /// Reads and loads a component file for the unmetered engine.
    pub(crate) fn load_file(&self, path: &Path) -> Result<(Component, String), CompileError> {
        let bytes = std::fs::read(path).map_err(|source| CompileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let sha256 = sha256_hex(&bytes);
        Ok((self.load(path, &bytes, &sha256, false)?, sha256))
    }
}

/// Hands freed heap back to the kernel: glibc keeps freed heap mapped (and counted in the
/// process's RSS) until it is trimmed. Called after each compile (cranelift's working memory
/// for a component is several MiB, all freed when the compile ends) and by the node at rest.
/// The trim walks the free chunks of the heap: well under a millisecond for a node's heap.
#[allow(unsafe_code)]
pub fn release_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer and only returns free heap pages to the kernel;
    // glibc makes it safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

//! The one plugin instance of a component.
//!
//! A component instance runs one call at a time on one thread and never
//! re-enters itself, so a `RefCell` in a static is enough; a trap (a panic
//! aborts) discards the whole instance, state included.

use core::any::Any;
use core::cell::RefCell;

struct Slot(RefCell<Option<Box<dyn Any>>>);

// SAFETY: wasm32-wasip2 components are single-threaded; the host never runs
// two calls on one instance at once.
unsafe impl Sync for Slot {}

static PLUGIN: Slot = Slot(RefCell::new(None));

/// Runs `f` on the plugin, creating it with `Default` on first use.
pub fn with<T: Default + 'static, R>(f: impl FnOnce(&mut T) -> R) -> R {
    let mut slot = PLUGIN.0.borrow_mut();
    let plugin = slot.get_or_insert_with(|| {
        install_panic_hook();
        Box::new(T::default())
    });
    let plugin = plugin
        .downcast_mut::<T>()
        .expect("wasmlet_plugin_sdk::export! used for two types in one component");
    f(plugin)
}

/// Replaces the plugin with a fresh default one and lets `f` configure it,
/// so each `configure` starts from scratch rather than layering configs.
pub fn reset<T: Default + 'static, R>(f: impl FnOnce(&mut T) -> R) -> R {
    install_panic_hook();
    *PLUGIN.0.borrow_mut() = Some(Box::new(T::default()));
    with(f)
}

/// Sends a panic's message and location to the host log before the abort
/// traps, so the operator sees why (no WASI stderr is granted).
fn install_panic_hook() {
    static mut INSTALLED: bool = false;
    // SAFETY: single-threaded, see `Slot`.
    unsafe {
        if INSTALLED {
            return;
        }
        INSTALLED = true;
    }
    std::panic::set_hook(Box::new(|info| {
        let location = info.location().map(|l| l.to_string()).unwrap_or_default();
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(non-string panic payload)");
        crate::host::log(
            crate::types::LogLevel::Error,
            "plugin panicked",
            &[("panic", message), ("location", &location)],
        );
    }));
}

//! Why a plugin did not decide, and why a version could not be loaded: typed, so callers can
//! tell a missing plugin from a faulty one; displayed exactly as the host has always logged
//! them (the reason in `decidedBy`, events and `/plugins`).

use crate::engine::CompileError;

/// Why a plugin call gave no usable answer; the caller falls back (or fails the probe).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// No plugin serves the world: the built-in default decides, as without plugins.
    #[error("no plugin configured")]
    NotConfigured,
    /// The plugin is not loaded yet or has failed.
    #[error("plugin {0} is not serving")]
    NotServing(String),
    /// A probe annotation names a plugin the config does not have.
    #[error("no probe-handler plugin named {0:?} is configured")]
    NoProbePlugin(String),
    /// The plugin faulted (trap, deadline, fuel, memory, nonsense answer...).
    #[error("plugin {plugin} {fault}")]
    Fault {
        /// The plugin's name.
        plugin: String,
        /// What went wrong.
        #[source]
        fault: Fault,
    },
    /// A hook answered `err(reason)`: a refusal, not a fault of the plugin.
    #[error("plugin {plugin}: {reason}")]
    Refused {
        /// The plugin's name.
        plugin: String,
        /// The plugin's own words.
        reason: String,
    },
}

/// Why a version of a plugin could not be loaded for its world.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Not readable, or not a valid component.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A component, but not of the configured world.
    #[error("does not implement world {expected} (it implements {found}): {detail}")]
    World {
        /// The configured world.
        expected: &'static str,
        /// The world it fits, or "no plugin world".
        found: String,
        /// The linker's complaint (the missing or unknown import).
        detail: String,
    },
}

/// Why a call did not produce a usable answer; the host then uses its built-in default.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// Interrupted at its deadline (ms): the plugin's, or the probe's or hook's.
    #[error("ran past its {0} ms deadline")]
    Deadline(u64),
    /// Ran out of its `fuel` limit.
    #[error("exhausted its fuel")]
    Fuel,
    /// Tried to grow its memory past `memoryMiB`.
    #[error("exceeded its {0} MiB memory cap")]
    Memory(u64),
    /// Any other trap (a panic, unreachable, an out-of-bounds access...).
    #[error("trapped: {0}")]
    Trap(String),
    /// A granted directory could not be opened.
    #[error("cannot be given its capabilities: {0}")]
    Grant(String),
    /// `configure` answered `err`.
    #[error("configure refused the config: {0}")]
    Configure(String),
    /// The call answered `err` (or `self-check` did).
    #[error("returned an error: {0}")]
    Error(String),
    /// The answer failed the host's checks.
    #[error("answered nonsense: {0}")]
    Rejected(String),
}

//! wasmlet's plugin host: policies as WebAssembly components (`wit/`, package
//! `wasmlet:plugin@0.1.2`), run sandboxed under per-plugin limits, swapped on a live node, and
//! backed by built-in defaults.
//!
//! This is the only crate of the workspace that depends on wasmtime. Its public API speaks the
//! host's terms (plain records, [`PluginRegistry`] decisions, typed errors); the generated WIT
//! bindings stay private, so the crate boundary keeps them from spreading.

mod bindings;
mod cap;
mod config;
mod distribute;
mod engine;
mod error;
mod instance;
mod limiter;
mod metrics;
pub mod names;
mod oci;
mod project;
mod records;
mod registry;
mod selector;
mod state;
mod timestamp;
mod tool;
mod wasi;
pub mod yaml;

pub use config::{
    Capabilities, DirectoryGrant, Limits, OciSource, PluginConfigError, PluginSource, PluginSpec,
    Rollout, World, CONTRACT_VERSION, DEFAULT_POLL_PERIOD,
};
pub use distribute::{pull_plugin, push_plugin, sign_plugin, Pulled, RegistryAccess};
pub use engine::{release_freed_heap, sha256_hex, CompileError, EngineError, PluginEngine};
pub use error::{Fault, LoadError, PluginError};
pub use instance::LoadedPlugin;
pub use oci::parsers as oci_parsers;
pub use oci::{OciError, OciReference, ReferenceError};
pub use project::{
    build_project, new_plugin, BuildOptions, Built, Lang, Project, ProjectError, SdkError,
    SDK_VERSION,
};
pub use records::{
    AdmissionContainer, AdmissionPod, ExecFn, ExecOutput, PodMeta, PodScope, ProbeKind,
    ProbeOutcome, ProbeRequest, ProbeResult,
};
pub use registry::{
    CandidateRank, PluginRegistry, PluginSlot, PluginState, Rejected, RolloutState, FAULTS_TO_FAIL,
};
pub use registry::{DecidedBy, Decision, EvictionSnapshot, PressureDecision};
pub use selector::{LabelRequirement, Operator, PodSelector};
pub use tool::{parse_env_grant, parse_grant, test_plugin, validate_plugin, ToolError};

//! A test node and what tests read from it: the real `wasmlet` binary on the shared real
//! containerd ([`Node`]), pod manifests and status readers, and `promtool` on metrics text.

mod node;
mod options;
mod pods;
mod promtool;

pub use node::{cri_socket, free_port, wasmlet_binary, Node};
pub use options::{NodeOptions, SecurePortOptions};
pub use pods::{
    busybox_pod, condition, container_status, event_time, seconds_between, secs,
    write_plugin_config,
};
pub use promtool::promtool_check;

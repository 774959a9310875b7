//! The command line's shape: the commands and flags clap parses, kept apart from what
//! each command does.

use crate::plugin_cmd::PluginCommand;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "wasmlet",
    version,
    about = "A Kubernetes node agent whose policies are WebAssembly components"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the node agent.
    Run(RunArgs),
    /// Print the version.
    Version,
    /// Tools for plugin authors.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Show the pods of a running node (from its read-only port).
    Get {
        /// Only `pods` is known.
        #[arg(value_parser = ["pods", "pod", "po"])]
        resource: String,
        #[command(flatten)]
        server: ServerArg,
    },
    /// Print a container's log, read from the node's CRI log files (run it on the node, as
    /// root).
    Logs(LogsArgs),
}

// No doc comment here: `logs --help` takes its text from the `Logs` command.
#[derive(clap::Args)]
pub(crate) struct LogsArgs {
    /// Pod name as /pods shows it (static pods: `<name>-<node>`).
    pub(crate) pod: String,
    #[arg(short = 'c', long)]
    pub(crate) container: Option<String>,
    #[arg(short = 'n', long, default_value = "default")]
    pub(crate) namespace: String,
    /// The previous, terminated attempt of the container.
    #[arg(short = 'p', long)]
    pub(crate) previous: bool,
    /// Keep streaming while the container runs.
    #[arg(short = 'f', long)]
    pub(crate) follow: bool,
    /// Only the last N lines.
    #[arg(long)]
    pub(crate) tail: Option<u64>,
    /// Only lines newer than this (e.g. 10s, 5m).
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// Prefix each line with its timestamp.
    #[arg(long)]
    pub(crate) timestamps: bool,
    /// Stop after this many bytes.
    #[arg(long)]
    pub(crate) limit_bytes: Option<u64>,
    /// The node's config file, for its podLogsDir and containerRuntimeEndpoint.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// The node's podLogsDir (default: from --config, else /var/log/pods).
    #[arg(long)]
    pub(crate) pod_logs_dir: Option<PathBuf>,
    /// The node's CRI endpoint, asked during -f whether the container still runs
    /// (default: from --config, else unix:///run/containerd/containerd.sock).
    #[arg(long, env = "CONTAINER_RUNTIME_ENDPOINT")]
    pub(crate) container_runtime_endpoint: Option<String>,
    /// Ignored: logs are no longer served by the read-only port, they are read from the
    /// files (kept so existing scripts keep working).
    #[arg(long, hide = true)]
    pub(crate) server: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct ServerArg {
    /// The node's read-only port.
    #[arg(long, default_value = "http://127.0.0.1:10255", env = "WASMLET_SERVER")]
    pub(crate) server: String,
}

/// Flags keep the kubelet's names; each overrides the config file.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// KubeletConfiguration file (and optionally a WasmletConfiguration document).
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Directory for wasmlet's state (upstream default /var/lib/kubelet).
    #[arg(long)]
    pub(crate) root_dir: Option<PathBuf>,
    /// Node name instead of the machine's hostname.
    #[arg(long)]
    pub(crate) hostname_override: Option<String>,
    /// The node's IP address, reported as hostIP.
    #[arg(long)]
    pub(crate) node_ip: Option<String>,
    /// CRI endpoint, unix:///path.
    #[arg(long)]
    pub(crate) container_runtime_endpoint: Option<String>,
    /// Static pod directory (upstream's deprecated flag for staticPodPath).
    #[arg(long)]
    pub(crate) pod_manifest_path: Option<String>,
    #[arg(long)]
    pub(crate) read_only_port: Option<u16>,
    #[arg(long)]
    pub(crate) healthz_port: Option<u16>,
    #[arg(long)]
    pub(crate) max_pods: Option<i64>,
    /// The authenticated HTTPS port (0: off), over `port`.
    #[arg(long)]
    pub(crate) port: Option<u16>,
    /// Where the self-signed serving certificate is kept (default <root-dir>/pki).
    #[arg(long)]
    pub(crate) cert_dir: Option<PathBuf>,
    /// CA bundle for client certificates of the secure port, over
    /// `authentication.x509.clientCAFile`.
    #[arg(long)]
    pub(crate) client_ca_file: Option<String>,
    /// Join the cluster this kubeconfig names, as the node identity it holds; without it
    /// wasmlet runs standalone on static pods.
    #[arg(long)]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Labels the Node is registered with, key=value[,key=value...].
    #[arg(long)]
    pub(crate) node_labels: Option<String>,
    /// Log format, `text` or `json` (upstream's JSON lines), over `logging.format`.
    #[arg(long)]
    pub(crate) logging_format: Option<String>,
    /// Log verbosity (klog's scale: 2+ debug, 5+ trace for wasmlet), over
    /// `logging.verbosity`. RUST_LOG, when set, wins over it and over --vmodule.
    #[arg(short = 'v', long = "v", value_name = "N")]
    pub(crate) verbosity: Option<u32>,
    /// Per-module verbosity, `module=N[,module=N...]` (e.g. `pod_worker=4,gc=2`), over
    /// `logging.vmodule`.
    #[arg(long, value_name = "PATTERN=N,...")]
    pub(crate) vmodule: Option<String>,
}

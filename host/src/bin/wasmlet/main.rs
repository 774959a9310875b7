//! The `wasmlet` command line.

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use wasmlet::config::{NodeConfig, Overrides};

#[derive(Parser)]
#[command(
    name = "wasmlet",
    version,
    about = "A Kubernetes node agent whose policies are WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    Logs {
        /// Pod name as /pods shows it (static pods: `<name>-<node>`).
        pod: String,
        #[arg(short = 'c', long)]
        container: Option<String>,
        #[arg(short = 'n', long, default_value = "default")]
        namespace: String,
        /// The previous, terminated attempt of the container.
        #[arg(short = 'p', long)]
        previous: bool,
        /// Keep streaming while the container runs.
        #[arg(short = 'f', long)]
        follow: bool,
        /// Only the last N lines.
        #[arg(long)]
        tail: Option<u64>,
        /// Only lines newer than this (e.g. 10s, 5m).
        #[arg(long)]
        since: Option<String>,
        /// Prefix each line with its timestamp.
        #[arg(long)]
        timestamps: bool,
        /// Stop after this many bytes.
        #[arg(long)]
        limit_bytes: Option<u64>,
        /// The node's config file, for its podLogsDir and containerRuntimeEndpoint.
        #[arg(long)]
        config: Option<PathBuf>,
        /// The node's podLogsDir (default: from --config, else /var/log/pods).
        #[arg(long)]
        pod_logs_dir: Option<PathBuf>,
        /// The node's CRI endpoint, asked during -f whether the container still runs
        /// (default: from --config, else unix:///run/containerd/containerd.sock).
        #[arg(long, env = "CONTAINER_RUNTIME_ENDPOINT")]
        container_runtime_endpoint: Option<String>,
        /// Ignored: logs are no longer served by the read-only port, they are read from the
        /// files (kept so existing scripts keep working).
        #[arg(long, hide = true)]
        server: Option<String>,
    },
}

#[derive(Subcommand)]
enum PluginCommand {
    /// Check that a component implements a plugin world and configures and self-checks
    /// within its limits, under WASI deny-all plus the grants given here.
    ///
    /// The report ends with the WASI interfaces the component imports beyond io, clocks,
    /// random and cli stdio/exit (which every plugin gets), each with what the sandbox gives it:
    /// `wasi:filesystem/*` "no directory granted" or the granted directories,
    /// `wasi:cli/environment` "empty" or the granted names, `wasi:sockets/*` and `wasi:http/*`
    /// "denied". It is printed when the component is refused too, so a grant a language
    /// runtime needs shows there.
    Validate {
        file: PathBuf,
        /// eviction-policy, gc-strategy, probe-handler or lifecycle-hooks (detected if unset).
        #[arg(long)]
        world: Option<String>,
        /// The JSON passed to configure.
        #[arg(long, default_value = "{}")]
        config: String,
        #[arg(long, default_value_t = 50)]
        deadline_ms: u64,
        #[arg(long, default_value_t = 32)]
        memory_mib: u64,
        /// A host directory the plugin may read, as HOST or HOST:GUEST (repeatable); the
        /// same grant as `capabilities.directories` in the plugin config.
        #[arg(long = "grant-dir", value_parser = wasmlet_plugin_host::parse_grant)]
        grant_dirs: Vec<wasmlet_plugin_host::DirectoryGrant>,
        /// An environment variable the plugin sees, as NAME=VALUE (repeatable); the same
        /// grant as `capabilities.environment` in the plugin config.
        #[arg(long = "grant-env", value_parser = wasmlet_plugin_host::parse_env_grant)]
        grant_env: Vec<(String, String)>,
    },
    /// Write a ready-to-build plugin project for a world, in Rust, Go, Python or JavaScript.
    New {
        name: String,
        /// eviction-policy, gc-strategy, probe-handler or lifecycle-hooks.
        #[arg(long)]
        world: String,
        /// rust, go, python or js.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Where to create it (default: the current directory).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// The language's SDK (plugins/sdk, sdk-go, sdk-python or sdk-js; default: found in
        /// the wasmlet checkout above here or above the wasmlet binary).
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
    /// Build a plugin project of any SDK language into one component, DIR/<name>.wasm.
    Build {
        /// The project directory.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// rust, go, python or js (default: told by the project's files).
        #[arg(long)]
        lang: Option<String>,
        /// The world (default: told by the project's manifest or imports).
        #[arg(long)]
        world: Option<String>,
        /// The component to write (default: DIR/<name>.wasm).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The language's SDK, for a project without a wasmlet-plugin.yaml outside a checkout.
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// Where componentize-py, jco and the Go componentizer are installed (default:
        /// $WASMLET_PLUGIN_TOOLS, else ~/.cache/wasmlet/plugin-tools).
        #[arg(long)]
        tools_dir: Option<PathBuf>,
    },
    /// Run one decision on a snapshot file and print it beside the built-in default's.
    Test {
        file: PathBuf,
        #[arg(long)]
        fixture: PathBuf,
        #[arg(long, default_value = "{}")]
        config: String,
        /// A host directory the plugin may read, as HOST or HOST:GUEST (repeatable).
        #[arg(long = "grant-dir", value_parser = wasmlet_plugin_host::parse_grant)]
        grant_dirs: Vec<wasmlet_plugin_host::DirectoryGrant>,
        /// An environment variable the plugin sees, as NAME=VALUE (repeatable).
        #[arg(long = "grant-env", value_parser = wasmlet_plugin_host::parse_env_grant)]
        grant_env: Vec<(String, String)>,
    },
    /// Push a component to an OCI registry as a wasm artifact (CNCF layout); prints its digest.
    Push {
        file: PathBuf,
        /// oci://registry[:port]/repository:tag
        reference: String,
        #[command(flatten)]
        registry: RegistryFlags,
    },
    /// Pull a plugin artifact, check its digests, write its component; prints its digest.
    Pull {
        /// oci://registry[:port]/repository:tag or ...@sha256:<hex>
        reference: String,
        /// Where to write the component (default: <repository name>.wasm here).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also require a signature by this PEM public key, as `verify.publicKey` does.
        #[arg(long)]
        key: Option<PathBuf>,
        #[command(flatten)]
        registry: RegistryFlags,
    },
    /// Sign a plugin artifact (a tag is resolved to its digest) with a P-256 private key in
    /// PEM, stored as cosign stores key-pair signatures.
    Sign {
        /// oci://registry[:port]/repository@sha256:<hex> or ...:tag
        reference: String,
        #[arg(long)]
        key: PathBuf,
        #[command(flatten)]
        registry: RegistryFlags,
    },
}

/// How `plugin push|pull|sign` reach a registry.
#[derive(clap::Args)]
struct RegistryFlags {
    /// Plain HTTP to a registry not on loopback (loopback registries always get it).
    #[arg(long)]
    insecure: bool,
    /// A docker-style config.json with credentials (default: $DOCKER_CONFIG/config.json,
    /// then ~/.docker/config.json).
    #[arg(long)]
    registry_config: Option<PathBuf>,
}

impl RegistryFlags {
    fn access(self) -> wasmlet_plugin_host::RegistryAccess {
        wasmlet_plugin_host::RegistryAccess {
            insecure: self.insecure,
            registry_config: self.registry_config,
        }
    }
}

/// `--world`: one of the plugin worlds.
fn parse_world(text: &str) -> anyhow::Result<wasmlet_plugin_host::World> {
    wasmlet_plugin_host::World::ALL
        .into_iter()
        .find(|known| known.as_str() == text)
        .ok_or_else(|| {
            anyhow::anyhow!("--world: unknown world {text:?} (eviction-policy, gc-strategy, probe-handler, lifecycle-hooks)")
        })
}

/// `--grant-dir` and `--grant-env` as the plugin config's `capabilities`; a name given twice
/// keeps its last value.
fn grants(
    directories: Vec<wasmlet_plugin_host::DirectoryGrant>,
    environment: Vec<(String, String)>,
) -> wasmlet_plugin_host::Capabilities {
    wasmlet_plugin_host::Capabilities {
        directories,
        environment: environment.into_iter().collect(),
        ..Default::default()
    }
}

/// `--lang`: one of the SDK languages.
fn parse_lang(text: &str) -> anyhow::Result<wasmlet_plugin_host::Lang> {
    wasmlet_plugin_host::Lang::parse(text)
        .ok_or_else(|| anyhow::anyhow!("--lang: unknown language {text:?} (rust, go, python, js)"))
}

#[derive(clap::Args)]
struct ServerArg {
    /// The node's read-only port.
    #[arg(long, default_value = "http://127.0.0.1:10255", env = "WASMLET_SERVER")]
    server: String,
}

/// Flags keep the kubelet's names; each overrides the config file.
#[derive(clap::Args)]
struct RunArgs {
    /// KubeletConfiguration file (and optionally a WasmletConfiguration document).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory for wasmlet's state (upstream default /var/lib/kubelet).
    #[arg(long)]
    root_dir: Option<PathBuf>,
    /// Node name instead of the machine's hostname.
    #[arg(long)]
    hostname_override: Option<String>,
    /// The node's IP address, reported as hostIP.
    #[arg(long)]
    node_ip: Option<String>,
    /// CRI endpoint, unix:///path.
    #[arg(long)]
    container_runtime_endpoint: Option<String>,
    /// Static pod directory (upstream's deprecated flag for staticPodPath).
    #[arg(long)]
    pod_manifest_path: Option<String>,
    #[arg(long)]
    read_only_port: Option<u16>,
    #[arg(long)]
    healthz_port: Option<u16>,
    #[arg(long)]
    max_pods: Option<i64>,
    /// The authenticated HTTPS port (0: off), over `port`.
    #[arg(long)]
    port: Option<u16>,
    /// Where the self-signed serving certificate is kept (default <root-dir>/pki).
    #[arg(long)]
    cert_dir: Option<PathBuf>,
    /// CA bundle for client certificates of the secure port, over
    /// `authentication.x509.clientCAFile`.
    #[arg(long)]
    client_ca_file: Option<String>,
    /// Join the cluster this kubeconfig names, as the node identity it holds; without it
    /// wasmlet runs standalone on static pods.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Labels the Node is registered with, key=value[,key=value...].
    #[arg(long)]
    node_labels: Option<String>,
    /// Log format, `text` or `json` (upstream's JSON lines), over `logging.format`.
    #[arg(long)]
    logging_format: Option<String>,
    /// Log verbosity (klog's scale: 2+ debug, 5+ trace for wasmlet), over
    /// `logging.verbosity`. RUST_LOG, when set, wins over it and over --vmodule.
    #[arg(short = 'v', long = "v", value_name = "N")]
    verbosity: Option<u32>,
    /// Per-module verbosity, `module=N[,module=N...]` (e.g. `pod_worker=4,gc=2`), over
    /// `logging.vmodule`.
    #[arg(long, value_name = "PATTERN=N,...")]
    vmodule: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // `run` sets up logging from its config file and flags; the tools log as text at -v 0.
    let _logging = match &cli.command {
        Command::Run(_) => None,
        _ => Some(wasmlet::logging::init(&Default::default(), None, "")?),
    };
    match cli.command {
        Command::Version => {
            println!("wasmlet {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::Validate {
                    file,
                    world,
                    config,
                    deadline_ms,
                    memory_mib,
                    grant_dirs,
                    grant_env,
                },
        } => {
            let world = world.as_deref().map(parse_world).transpose()?;
            let limits = wasmlet_plugin_host::Limits {
                deadline_ms,
                memory_mib,
                fuel: None,
            };
            let report = wasmlet_plugin_host::validate_plugin(
                &file,
                world,
                &config,
                limits,
                grants(grant_dirs, grant_env),
            )
            .inspect_err(|error| {
                // What it imports and was not granted, beside the reason on stderr.
                if let wasmlet_plugin_host::ToolError::Invalid { report, .. } = error {
                    println!("{report}");
                }
            })?;
            println!("{report}");
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::New {
                    name,
                    world,
                    lang,
                    dir,
                    sdk,
                },
        } => {
            let world = parse_world(&world)?;
            let lang = parse_lang(&lang)?;
            let root = wasmlet_plugin_host::new_plugin(&name, world, lang, &dir, sdk.as_deref())?;
            println!(
                "created {} (world {}, {})",
                root.display(),
                world.as_str(),
                lang.as_str()
            );
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::Build {
                    dir,
                    lang,
                    world,
                    out,
                    sdk,
                    tools_dir,
                },
        } => {
            let options = wasmlet_plugin_host::BuildOptions {
                lang: lang.as_deref().map(parse_lang).transpose()?,
                world: world.as_deref().map(parse_world).transpose()?,
                out,
                sdk,
                tools_dir,
            };
            let built = wasmlet_plugin_host::build_project(&dir, &options)?;
            let world = built.project.world.map_or("?", |w| w.as_str());
            println!(
                "built {} (world {world}, {})",
                built.file.display(),
                built.project.lang.as_str()
            );
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::Test {
                    file,
                    fixture,
                    config,
                    grant_dirs,
                    grant_env,
                },
        } => {
            let grants = grants(grant_dirs, grant_env);
            let result = wasmlet_plugin_host::test_plugin(&file, &fixture, &config, &grants)?;
            println!("{}", serde_json::to_string_pretty(&result)?);
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::Push {
                    file,
                    reference,
                    registry,
                },
        } => {
            let report = wasmlet_plugin_host::push_plugin(&file, &reference, &registry.access())?;
            println!("{report}");
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::Pull {
                    reference,
                    out,
                    key,
                    registry,
                },
        } => {
            let pulled = wasmlet_plugin_host::pull_plugin(
                &reference,
                out.as_deref(),
                key.as_deref(),
                &registry.access(),
            )?;
            println!(
                "pulled {reference}\n  digest: {}\n  sha256: {}\n  written to {}",
                pulled.digest,
                pulled.sha256,
                pulled.file.display()
            );
            Ok(())
        }
        Command::Plugin {
            command:
                PluginCommand::Sign {
                    reference,
                    key,
                    registry,
                },
        } => {
            let report = wasmlet_plugin_host::sign_plugin(&reference, &key, &registry.access())?;
            println!("{report}");
            Ok(())
        }
        Command::Get { server, .. } => {
            wasmlet::terminal::get_pods(&server.server, &mut std::io::stdout().lock())?;
            Ok(())
        }
        Command::Logs {
            pod,
            container,
            namespace,
            previous,
            follow,
            tail,
            since,
            timestamps,
            limit_bytes,
            config,
            pod_logs_dir,
            container_runtime_endpoint,
            server,
        } => {
            if server.is_some() {
                eprintln!("wasmlet logs: --server is ignored; logs are read from podLogsDir");
            }
            let node = match &config {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("--config {}", path.display()))?;
                    Some(wasmlet::config::parse_str(path, &text)?.0)
                }
                None => None,
            };
            let pod_logs_dir = pod_logs_dir
                .or_else(|| node.as_ref().map(|n| PathBuf::from(&n.pod_logs_dir)))
                .unwrap_or_else(|| PathBuf::from("/var/log/pods"));
            let endpoint = container_runtime_endpoint
                .or_else(|| node.as_ref().map(|n| n.container_runtime_endpoint.clone()))
                .unwrap_or_else(|| "unix:///run/containerd/containerd.sock".into());
            let socket = PathBuf::from(endpoint.strip_prefix("unix://").unwrap_or(&endpoint));
            let source = wasmlet::terminal::LogSource {
                pod_logs_dir,
                runtime_socket: socket.exists().then_some(socket),
            };
            let since_seconds = since
                .map(|since| {
                    wasmlet::config::duration::parse(&since)
                        .map(|d| d.as_secs().max(1))
                        .map_err(|e| anyhow::anyhow!("--since: {e}"))
                })
                .transpose()?;
            let options = wasmlet::logs::LogOptions {
                tail_lines: tail,
                since_seconds,
                timestamps,
                previous,
                follow,
                limit_bytes,
                ..Default::default()
            };
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            let mut out = std::io::stdout().lock();
            runtime.block_on(wasmlet::terminal::logs(
                &source,
                &namespace,
                &pod,
                container.as_deref(),
                options,
                &mut out,
            ))?;
            Ok(())
        }
        Command::Run(args) => {
            let overrides = Overrides {
                root_dir: args.root_dir,
                hostname_override: args.hostname_override,
                node_ip: args.node_ip,
                container_runtime_endpoint: args.container_runtime_endpoint,
                pod_manifest_path: args.pod_manifest_path,
                read_only_port: args.read_only_port,
                healthz_port: args.healthz_port,
                max_pods: args.max_pods,
                kubeconfig: args.kubeconfig,
                node_labels: args.node_labels,
                port: args.port,
                cert_dir: args.cert_dir,
                client_ca_file: args.client_ca_file,
                logging_format: args.logging_format,
                verbosity: args.verbosity,
                vmodule: args.vmodule,
            };
            let (config, warnings) = NodeConfig::load(args.config.as_deref(), &overrides)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            // Inside the runtime: the OTLP exporter's gRPC channel is spawned on it, and the
            // guard's final flush needs it running.
            let logging = {
                let _runtime = runtime.enter();
                wasmlet::logging::init(
                    &config.kubelet.logging,
                    config.kubelet.tracing.as_ref(),
                    &config.node_name,
                )?
            };
            for warning in warnings {
                tracing::warn!(field = %warning.field, "config: {}", warning.message);
            }
            let result = runtime.block_on(wasmlet::agent::run(config));
            drop(logging);
            result?;
            Ok(())
        }
    }
}

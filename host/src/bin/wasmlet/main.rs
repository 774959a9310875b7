//! The `wasmlet` command line: `run` starts the node agent; `get`, `logs` and `plugin` are
//! tools for operators and plugin authors.

use anyhow::Context;
use clap::Parser;
use cli::{Cli, Command, LogsArgs, RunArgs};
use std::path::PathBuf;
use wasmlet::config::{NodeConfig, Overrides};

mod cli;
mod plugin_cmd;

fn main() -> anyhow::Result<()> {
    wasmlet::heap::use_one_arena();
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
        Command::Plugin { command } => plugin_cmd::run(command),
        Command::Get { server, .. } => {
            wasmlet::terminal::get_pods(&server.server, &mut std::io::stdout().lock())?;
            Ok(())
        }
        Command::Logs(args) => logs(args),
        Command::Run(args) => run(args),
    }
}

/// `wasmlet logs`: a container's log from the node's CRI log files, as `kubectl logs` shows it.
fn logs(args: LogsArgs) -> anyhow::Result<()> {
    let LogsArgs {
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
    } = args;
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

/// `wasmlet run`: the node agent, configured by its file and the flags over it, until it stops.
fn run(args: RunArgs) -> anyhow::Result<()> {
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

//! `wasmlet run`: wires the config, the runtime client, the source, the PLEG, the SyncLoop
//! and the HTTP endpoints together, and runs until a signal.

mod node_facts;

use crate::admission::PodAdmitChain;
use crate::backoff::Doubling;
use crate::config::NodeConfig;
use crate::cri::{CriClient, CriError};
use crate::eviction::{DecisionLog, EvictionConfig, EvictionManager, NodePressure};
use crate::gc::{ContainerGc, GarbageCollector, ImageGc, ImageGcPolicy};
use crate::health::Health;
use crate::kuberuntime::{NodeContext, RuntimeManager};
use crate::metrics::http::ServerType;
use crate::pleg::events::EventSource;
use crate::pleg::{self, Pleg, PlegConfig};
use crate::pod_worker::NodeRuntime;
use crate::server::{self, ServerState};
use crate::source::{self, SourceSnapshot};
use crate::status::{StatusManager, StatusStore};
use crate::syncloop::{SyncLoop, SyncLoopInputs};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::{info, warn};
use wasmlet_plugin_host::{PluginEngine, PluginRegistry};

/// Why the node agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The state directory (`--root-dir`) could not be created, so nothing can be stored.
    #[error("cannot create root dir {dir}: {source}")]
    RootDir {
        /// The directory that was refused.
        dir: PathBuf,
        /// What the filesystem said.
        #[source]
        source: std::io::Error,
    },
    /// A listening socket could not be bound, usually because the port is taken.
    #[error("cannot serve {what} on {addr}: {source}")]
    Bind {
        /// The config field that chose the port (`readOnlyPort`, `healthzPort`), so the operator
        /// knows what to change.
        what: &'static str,
        /// The address that was refused.
        addr: SocketAddr,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The container runtime (CRI) endpoint could not be dialled.
    #[error(transparent)]
    Runtime(#[from] CriError),
    /// The WebAssembly engine or a plugin could not be set up; the text names the plugin.
    #[error("cannot start the plugin engine: {0}")]
    Plugins(String),
    /// The secure port's certificates could not be set up, or its port is taken.
    #[error(transparent)]
    SecurePort(#[from] crate::secure_port::SecurePortError),
    /// `--kubeconfig` could not be used to reach the cluster.
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ConnectError),
    /// SIGTERM/SIGINT cannot be caught, so a graceful shutdown would be impossible.
    #[error("cannot install the signal handler: {0}")]
    Signal(#[source] std::io::Error),
}

/// Upstream's PLEG health threshold (`genericPlegRelistThreshold`).
const PLEG_THRESHOLD: Duration = Duration::from_secs(180);

/// Waits until the runtime answers `Version`, retrying with back-off; returns its name and
/// version.
async fn wait_for_runtime(cri: &CriClient, endpoint: &str) -> (String, String) {
    let mut backoff = Doubling::new(Duration::from_millis(100), Duration::from_secs(5));
    loop {
        match cri.version().await {
            Ok(version) => {
                info!(
                    runtime = %version.runtime_name,
                    version = %version.runtime_version,
                    api = %version.runtime_api_version,
                    "container runtime ready"
                );
                return (version.runtime_name, version.runtime_version);
            }
            Err(error) => {
                warn!(%endpoint, %error, retry_ms = backoff.peek().as_millis() as u64, "container runtime not ready");
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

/// Runs the node agent until SIGTERM or SIGINT. Pods keep running when it stops, as upstream.
pub async fn run(config: NodeConfig) -> Result<(), StartError> {
    let kubelet = &config.kubelet;
    std::fs::create_dir_all(&config.root_dir).map_err(|source| StartError::RootDir {
        dir: config.root_dir.clone(),
        source,
    })?;
    info!(node = %config.node_name, node_ip = %config.node_ip, root_dir = %config.root_dir.display(), "starting wasmlet");
    crate::metrics::kubelet::kubelet().set_build_info(
        crate::node_status::KUBELET_COMPATIBLE_VERSION,
        crate::node_status::go_arch(),
    );
    if let Some(boot) = crate::stats::node::boot_time()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
    {
        crate::metrics::process::set_boot_time(boot.as_secs_f64());
    }
    crate::metrics::kubelet::kubelet()
        .node_name
        .get_or_create(&crate::metrics::kubelet::label(
            "node",
            config.node_name.clone(),
        ))
        .set(1);

    let store = Arc::new(StatusStore::default());
    let syncloop_threshold = (kubelet.sync_frequency * 2).max(Duration::from_secs(300));
    let health = Arc::new(Health::new(syncloop_threshold, PLEG_THRESHOLD));
    let (source_tx, source_rx) = watch::channel(Arc::new(SourceSnapshot::default()));
    let (api_pods_tx, api_pods_rx) = watch::channel(Arc::new(source::ApiSnapshot::default()));

    // Plugins compile off the async executor; a bad plugin never stops the node.
    let cache_dir = config.root_dir.join("plugin-cache");
    let plugin_config = config.wasmlet.plugin_config.clone().map(PathBuf::from);
    // `oci://` plugins are kept under <rootDir>/plugins/oci.
    let root_dir = config.root_dir.clone();
    let plugins = tokio::task::spawn_blocking(move || {
        PluginEngine::new(Some(cache_dir))
            .map(|engine| PluginRegistry::with_root_dir(engine, plugin_config, &root_dir))
    })
    .await
    .map_err(|e| StartError::Plugins(e.to_string()))?
    .map_err(|e| StartError::Plugins(format!("{e:#}")))?;
    let _plugin_watcher = plugins.watch();
    let clients = match &config.kubeconfig {
        Some(path) => {
            let clients =
                crate::cluster::ApiClients::connect(path, &config.node_name, kubelet).await?;
            info!(kubeconfig = %path.display(), node = %config.node_name, "cluster mode: joining the API server");
            Some(clients)
        }
        None => None,
    };
    // Mirror pods of the static pods (cluster mode): statuses and events of a static pod go
    // to its mirror pod.
    let mirrors = Arc::new(crate::cluster::mirror::MirrorPods::default());
    // Standalone, events only go to the log; in cluster mode they are core/v1 Events.
    let events: Arc<dyn crate::events::EventRecorder> = match &clients {
        Some(clients) => crate::cluster::events::ApiEventRecorder::start(clients, mirrors.clone()),
        None => Arc::new(crate::events::LogOnly),
    };
    let prober = Arc::new(crate::prober::Prober::new(plugins.clone()).with_events(events.clone()));

    let metrics = Arc::new(crate::metrics::Metrics::with_plugins(&plugins));
    let pressure = Arc::new(NodePressure::new(config.wasmlet.evict_static_pods));
    let decision_log = Arc::new(DecisionLog::default());
    let node_view = Arc::new(crate::node_status::NodeView::new(
        pressure.clone(),
        health.clone(),
    ));
    spawn_volume_stats(
        kubelet.volume_stats_agg_period,
        config.root_dir.clone(),
        store.clone(),
    );
    crate::heap::spawn_periodic_release();
    let state = ServerState {
        store: store.clone(),
        health: health.clone(),
        source: source_rx.clone(),
        pod_logs_dir: PathBuf::from(&kubelet.pod_logs_dir),
        plugins: plugins.clone(),
        metrics: metrics.clone(),
        pressure: pressure.clone(),
        evictions: decision_log.clone(),
        node: node_view.clone(),
        probe_metrics: prober.metrics.clone(),
    };
    // The connection is lazy: nothing waits for the runtime here.
    let cri = CriClient::connect(kubelet.runtime_socket(), kubelet.runtime_request_timeout)?
        .with_start_limit(config.wasmlet.max_parallel_runtime_starts);
    let stats = server::stats::StatsState::new(
        cri.clone(),
        config.node_name.clone(),
        config.root_dir.clone(),
        PathBuf::from(&kubelet.pod_logs_dir),
        config.wasmlet.cadvisor_housekeeping_period,
    );
    // One router (one CPU sampler) for both ports.
    let stats = server::stats::router(stats);
    if kubelet.read_only_port != 0 {
        let ip: IpAddr = kubelet
            .address
            .parse()
            .unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let addr = SocketAddr::new(ip, kubelet.read_only_port);
        let router = server::read_only_router(state.clone())
            .merge(stats.clone())
            .layer(axum::middleware::from_fn(|request, next| {
                crate::metrics::http::track(ServerType::ReadOnly, request, next)
            }));
        server::serve(addr, router)
            .await
            .map_err(|source| StartError::Bind {
                what: "readOnlyPort",
                addr,
                source,
            })?;
        info!(%addr, "serving the read-only port");
    }
    if kubelet.port != 0 {
        let secure = crate::secure_port::SecurePort::new(&config, clients.as_ref())?;
        // More authenticated routes (exec/attach/portForward, stats): routers with their
        // state applied, merged behind the same filter.
        let streaming = crate::streaming::StreamingState::new(cri.clone(), state.store.clone());
        let extra = stats.merge(crate::streaming::router(streaming));
        secure.serve(state.clone(), extra).await?;
    }
    if kubelet.healthz_port != 0 {
        let ip: IpAddr = kubelet
            .healthz_bind_address
            .parse()
            .unwrap_or(IpAddr::from([127, 0, 0, 1]));
        let addr = SocketAddr::new(ip, kubelet.healthz_port);
        server::serve(addr, server::healthz_router(state))
            .await
            .map_err(|source| StartError::Bind {
                what: "healthzPort",
                addr,
                source,
            })?;
        info!(%addr, "serving healthz");
    }

    let (runtime_name, runtime_version) =
        wait_for_runtime(&cri, &kubelet.container_runtime_endpoint).await;

    let gc = Arc::new(GarbageCollector {
        cri: cri.clone(),
        plugins: plugins.clone(),
        metrics: metrics.clone(),
        images: ImageGc::new(
            ImageGcPolicy {
                high_threshold_percent: kubelet.image_gc_high_threshold_percent as u64,
                low_threshold_percent: kubelet.image_gc_low_threshold_percent as u64,
                min_age: kubelet.image_minimum_gc_age,
                max_age: kubelet.image_maximum_gc_age,
            },
            config.root_dir.join("image-gc-state.json"),
        ),
        containers: ContainerGc {
            node_name: config.node_name.clone(),
            policy: Default::default(),
        },
        source: source_rx.clone(),
        api_source: clients.is_some().then(|| api_pods_rx.clone()),
        cycles: Default::default(),
    });
    tokio::spawn(gc.clone().run(
        config.wasmlet.container_gc_period,
        config.wasmlet.image_gc_period,
    ));

    // Validated when the config was loaded; an error here cannot happen, but is not fatal.
    let thresholds = crate::config::eviction::thresholds(kubelet).unwrap_or_else(|(field, why)| {
        warn!(%field, %why, "eviction thresholds rejected; eviction is off");
        Vec::new()
    });
    let runtime_version = format!("{runtime_name}://{runtime_version}");
    let _ = node_view.facts.set(node_facts::node_facts(
        &config,
        &thresholds,
        runtime_version,
    ));
    let (evict_tx, evict_rx) = mpsc::channel(4);
    let eviction = Arc::new(EvictionManager {
        config: EvictionConfig {
            thresholds,
            pressure_transition_period: kubelet.eviction_pressure_transition_period,
            max_pod_grace_period: Duration::from_secs(
                kubelet.eviction_max_pod_grace_period.max(0) as u64
            ),
            monitoring_period: config.wasmlet.eviction_monitoring_period,
            psi_eviction_window: config.wasmlet.psi_eviction_window,
            node_pressure_path: config.wasmlet.node_pressure_path.clone(),
            root_dir: config.root_dir.clone(),
            pod_logs_dir: PathBuf::from(&kubelet.pod_logs_dir),
            node_name: config.node_name.clone(),
        },
        pressure: pressure.clone(),
        plugins: plugins.clone(),
        metrics: metrics.clone(),
        store: store.clone(),
        gc: gc.clone(),
        evictions: evict_tx,
        log: decision_log,
        events: events.clone(),
        state: Default::default(),
        cpu: Default::default(),
    });
    tokio::spawn(eviction.run());

    let plugins_for_admission = prober.plugins.clone();
    let mut status_sinks: Vec<Arc<dyn crate::status::StatusSink>> = Vec::new();
    // The API's view of this Node (labels, taints, allocatable), for admission.
    let (node_tx, node_rx) = watch::channel(None);
    if let Some(clients) = &clients {
        let writer = Arc::new(crate::cluster::status_sync::ApiStatusWriter::default());
        status_sinks.push(writer.clone());
        let (mirrors_tx, mirrors_rx) = watch::channel(Vec::new());
        let (node_uid_tx, node_uid_rx) = watch::channel(None);
        tokio::spawn(crate::cluster::pod_source::run(
            clients.clone(),
            api_pods_tx,
            mirrors_tx,
        ));
        tokio::spawn(crate::cluster::mirror::run(
            clients.clone(),
            mirrors.clone(),
            crate::cluster::mirror::MirrorInputs {
                statics: source_rx.clone(),
                mirrors: mirrors_rx,
                node_uid: node_uid_rx,
            },
        ));
        tokio::spawn(writer.run(clients.clone(), mirrors.clone(), api_pods_rx.clone()));
        tokio::spawn(crate::cluster::run_node(
            clients.clone(),
            node_view.clone(),
            kubelet.clone(),
            events.clone(),
            node_tx,
            node_uid_tx,
        ));
    }
    // Validated when the config was loaded.
    let reserved = crate::config::reserved::reserved(kubelet).unwrap_or_default();
    let node = Arc::new(NodeRuntime {
        runtime: RuntimeManager {
            cri: cri.clone(),
            node: NodeContext {
                node_name: config.node_name.clone(),
                node_ip: config.node_ip.to_string(),
                pod_logs_dir: PathBuf::from(&kubelet.pod_logs_dir),
                machine_memory_bytes: crate::machine::machine_memory_bytes(),
                allocatable_cpu_millis: crate::machine::machine_cpu_millis()
                    .saturating_sub(reserved.cpu_millis),
                allocatable_memory_bytes: crate::machine::machine_memory_bytes()
                    .saturating_sub(reserved.memory_bytes),
                root_dir: config.root_dir.clone(),
                dns: crate::kuberuntime::pod_config::DnsContext {
                    cluster_dns: kubelet.cluster_dns.clone(),
                    cluster_domain: kubelet.cluster_domain.clone(),
                    resolv_conf: PathBuf::from("/etc/resolv.conf"),
                },
            },
            plugins: prober.plugins.clone(),
            sync_frequency: kubelet.sync_frequency,
            objects: match &clients {
                Some(clients) => Arc::new(
                    crate::cluster::KubeObjectSource::new(
                        clients.clone(),
                        kubelet.config_map_and_secret_change_detection_strategy,
                    )
                    .watch_services(),
                ),
                None => Arc::new(crate::objects::Standalone),
            },
            events,
        },
        status: Arc::new(StatusManager::new(store.clone(), status_sinks)),
        runtime_name,
        container_backoff: config.wasmlet.container_restart_back_off,
        image_backoff: config.wasmlet.image_pull_back_off,
        prober,
    });

    let (pleg_tx, pleg_rx) = mpsc::channel(pleg::CHANNEL_CAPACITY);
    let (runtime_pods_tx, runtime_pods_rx) = watch::channel(None);
    let pleg_config = PlegConfig {
        relist_period: config.wasmlet.pleg_relist_period,
        evented_relist_period: config.wasmlet.pleg_evented_relist_period,
        // containerd 1.6 has no CRI GetContainerEvents but its own events service; other
        // runtimes are asked for CRI's stream (an Unimplemented answer leaves relisting alone).
        events: config
            .wasmlet
            .pleg_use_events
            .then_some(if node.runtime_name == "containerd" {
                EventSource::Containerd
            } else {
                EventSource::Cri
            }),
    };
    let pleg = Pleg::new(
        cri,
        &config.node_name,
        pleg_config,
        health.clone(),
        store.clone(),
    );
    tokio::spawn(pleg.run(pleg_tx, runtime_pods_tx));

    match &kubelet.static_pod_path {
        Some(path) => {
            tokio::spawn(source::run_static_source(
                PathBuf::from(path),
                config.node_name.clone(),
                kubelet.file_check_frequency,
                source_tx,
            ));
        }
        None => {
            info!("no staticPodPath configured: running no static pods");
            let _ = source_tx.send(Arc::new(SourceSnapshot {
                ready: true,
                ..Default::default()
            }));
        }
    }

    let (updates_tx, updates_rx) = mpsc::unbounded_channel();
    tokio::spawn(source::merge::run(
        source_rx,
        clients.is_some().then_some(api_pods_rx),
        updates_tx,
    ));
    // The predicates check pods against the Node: in cluster mode as the API server holds it
    // (labels, taints and allocatable others may change), standalone the one this agent
    // would register.
    let admission_node = if clients.is_some() {
        node_rx
    } else {
        watch::channel(node_view.current()).1
    };
    let admission = PodAdmitChain::new(
        pressure,
        admission_node,
        plugins_for_admission,
        &kubelet.allowed_unsafe_sysctls,
    );
    let syncloop = SyncLoop::new(node, health, admission, config.wasmlet.housekeeping_period);
    let inputs = SyncLoopInputs {
        updates: updates_rx,
        pleg_events: pleg_rx,
        runtime_pods: runtime_pods_rx,
        evictions: evict_rx,
    };
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(StartError::Signal)?;
    tokio::select! {
        _ = syncloop.run(inputs) => warn!("sync loop ended"),
        _ = tokio::signal::ctrl_c() => info!("interrupted; exiting (pods keep running)"),
        _ = terminate.recv() => info!("terminated; exiting (pods keep running)"),
    }
    Ok(())
}

/// Measures the pods' emptyDirs every `period` for `kubelet_volume_stats_*` (upstream's
/// `volumeStatsAggPeriod`), off the async workers: a measurement walks each volume.
fn spawn_volume_stats(
    period: std::time::Duration,
    root_dir: std::path::PathBuf,
    store: Arc<crate::status::StatusStore>,
) {
    if period.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (root_dir, pods) = (root_dir.clone(), store.list());
            let measured = tokio::task::spawn_blocking(move || {
                let samples = crate::stats::volume_usage::measure(&root_dir, &pods);
                crate::metrics::kubelet::kubelet().volume_stats.set(samples);
            })
            .await;
            if let Err(error) = measured {
                tracing::warn!(%error, "measuring the emptyDir volumes failed");
            }
        }
    });
}

//! A request to the kubelet API as hyper hands it over: the head parsed by httparse (hyper's
//! parser), the rest as the body. Each of wasmlet's readers of paths, queries and stream
//! headers is called directly and held to what it promises, then the request goes through the
//! secure port's router (filter, `/pods`, `/containerLogs`, `/configz`, `/metrics`, `/spec`,
//! exec/attach/portForward/run) on a node with one pod whose container has exited, so no
//! request waits on a runtime. Never panics, and every response body ends.
//!
//! The stats router is left out: its handlers read the runtime and cgroups, and its one query
//! reader (`only_cpu_and_memory`) is called directly.
#![no_main]

use axum::body::Body;
use axum::extract::Query;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use axum::Router;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tower::ServiceExt;
use wasmlet::logs::LogOptions;
use wasmlet::secure_port::{authn, authz};
use wasmlet::server::ServerState;
use wasmlet::streaming::{options, proxy};

const NODE: &str = "fuzz-node";
const UID: &str = "0f0e0d0c-0000-4000-8000-00000000f022";
/// The streaming server's address as the proxy would dial it.
const RUNTIME_ADDR: &str = "127.0.0.1:10010";
/// How long a response body may take to end; far more than reading a small log file takes.
const BODY_DEADLINE: Duration = Duration::from_secs(10);

struct Node {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    app: Router,
}

fn pod() -> (Pod, PodStatus) {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some(UID.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    // Exited after its second attempt: `/containerLogs` serves attempt 1 (or 0 with
    // `previous`) and a follower ends at the end of the file.
    let status = PodStatus {
        container_statuses: Some(vec![ContainerStatus {
            name: "app".into(),
            restart_count: 1,
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 1,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        ..Default::default()
    };
    (pod, status)
}

fn write_logs(pod_logs_dir: &std::path::Path, pod: &Pod) {
    let dir = wasmlet::podutil::log_directory(pod_logs_dir, pod);
    for attempt in 0..2u32 {
        let file = wasmlet::logs::log_file(&dir, "app", attempt);
        std::fs::create_dir_all(file.parent().expect("a container directory")).expect("log dir");
        std::fs::write(
            file,
            format!(
                "2026-12-03T10:00:0{attempt}.000000001Z stdout F attempt {attempt}\n\
                 2026-12-03T10:00:05.000000000Z stdout P a line the runtime \n\
                 2026-12-03T10:00:05.000000001Z stdout F split in two\n\
                 2026-12-03T10:00:09.999999999Z stderr F to stderr\n\
                 not a CRI line\n\
                 2026-12-03T10:00:10Z stdout F without a newline"
            ),
        )
        .expect("log file");
    }
}

fn node() -> &'static Node {
    static NODE_: OnceLock<Node> = OnceLock::new();
    NODE_.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("config.yaml");
        std::fs::write(
            &file,
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 0\n\
             authentication:\n  anonymous:\n    enabled: true\nauthorization:\n  mode: AlwaysAllow\n",
        )
        .expect("config file");
        let overrides = wasmlet::config::Overrides {
            root_dir: Some(dir.path().join("root")),
            hostname_override: Some(NODE.into()),
            node_ip: Some("127.0.0.1".into()),
            ..Default::default()
        };
        let config = wasmlet::config::NodeConfig::load(Some(&file), &overrides)
            .expect("node config")
            .0;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        // The CRI channel is lazy and spawns its worker: made inside the runtime.
        let _entered = runtime.enter();
        let health = Arc::new(wasmlet::health::Health::new(
            Duration::from_secs(300),
            Duration::from_secs(180),
        ));
        let pressure = Arc::new(wasmlet::eviction::NodePressure::new(false));
        let store = Arc::new(wasmlet::status::StatusStore::default());
        let (pod, status) = pod();
        wasmlet::status::StatusManager::new(store.clone(), Vec::new()).set_status(&pod, status);
        let pod_logs_dir = dir.path().join("logs");
        write_logs(&pod_logs_dir, &pod);
        let engine = wasmlet_plugin_host::PluginEngine::new(None).expect("plugin engine");
        let state = ServerState {
            store: store.clone(),
            health: health.clone(),
            source: tokio::sync::watch::channel(Arc::new(
                wasmlet::source::SourceSnapshot::default(),
            ))
            .1,
            pod_logs_dir,
            plugins: wasmlet_plugin_host::PluginRegistry::new(engine, None),
            metrics: Arc::default(),
            pressure: pressure.clone(),
            evictions: Arc::default(),
            node: Arc::new(wasmlet::node_status::NodeView::new(pressure, health)),
            probe_metrics: Arc::default(),
        };
        // No runtime listens there: a call that gets as far as the runtime fails at once.
        let cri = wasmlet::cri::CriClient::connect(dir.path().join("no-runtime.sock"), Duration::from_secs(1))
            .expect("CRI client");
        let streaming =
            wasmlet::streaming::router(wasmlet::streaming::StreamingState::new(cri, store));
        let port = wasmlet::secure_port::SecurePort::with_reviewers(&config, None)
            .expect("secure port");
        let app = port.app(state, streaming);
        drop(_entered);
        Node {
            _dir: dir,
            runtime,
            app,
        }
    })
}

/// What each reader of the request promises, whatever the request.
fn check_readers(method: &Method, uri: &Uri, headers: &HeaderMap) {
    let (path, query) = (uri.path(), uri.query());

    let attributes = authz::request_attributes(method.as_str(), path, NODE);
    let subresources: Vec<&str> = attributes.iter().map(|a| a.subresource).collect();
    let coarse = ["stats", "metrics", "log", "spec", "checkpoint", "proxy"];
    match subresources.as_slice() {
        [last] => assert!(coarse.contains(last), "{path}: {subresources:?}"),
        [first, last] => {
            assert!(
                ["pods", "healthz", "configz", "statusz"].contains(first),
                "{path}: {subresources:?}"
            );
            assert!(coarse.contains(last), "{path}: {subresources:?}");
        }
        _ => panic!("{path}: {subresources:?}"),
    }
    assert!(attributes
        .iter()
        .all(|a| a.resource == "nodes" && a.name == NODE && a.verb == attributes[0].verb));
    let _ = wasmlet::metrics::http::path_bucket(path);

    if let Some(token) = authn::bearer_token(headers) {
        assert!(!token.is_empty() && token.trim() == token, "{token:?}");
    }

    let websocket = proxy::is_websocket_request(headers);
    assert!(!websocket || proxy::is_upgrade_request(headers));

    match options::stream_options(query) {
        Ok(streams) => {
            assert!(
                streams.stdin || streams.stdout || streams.stderr,
                "{query:?}"
            );
            assert!(!(streams.tty && streams.stderr), "{query:?}");
        }
        Err(error) => assert_eq!(error, options::OptionsError::NoStreams),
    }
    if let Ok(exec) = options::exec_options(query) {
        assert!(!exec.command.is_empty(), "{query:?}");
    }
    if let Ok(command) = options::run_command(query) {
        assert!(!command.is_empty(), "{query:?}");
    }
    if let Ok(ports) = options::port_forward_ports(query, websocket) {
        assert_eq!(ports.is_empty(), !websocket, "{query:?}");
        assert!(ports.iter().all(|p| (1..=65535).contains(p)), "{ports:?}");
    }
    let _ = wasmlet::server::stats::only_cpu_and_memory(query);
    if let Ok(Query(log_options)) = Query::<LogOptions>::try_from_uri(uri) {
        let _ = log_options.validate();
    }

    if let Ok(forwarded) = proxy::forwarded_headers(headers, RUNTIME_ADDR) {
        assert!(forwarded.get(header::AUTHORIZATION).is_none());
        assert!(forwarded.get(header::PROXY_AUTHORIZATION).is_none());
        let hosts: Vec<&HeaderValue> = forwarded.get_all(header::HOST).iter().collect();
        assert_eq!(hosts, [RUNTIME_ADDR]);
        // What the runtime negotiates the stream with passes unchanged, in order.
        for name in [
            header::CONNECTION,
            header::UPGRADE,
            header::SEC_WEBSOCKET_PROTOCOL,
            header::SEC_WEBSOCKET_KEY,
            header::SEC_WEBSOCKET_VERSION,
            HeaderName::from_static("x-stream-protocol-version"),
        ] {
            let sent: Vec<&HeaderValue> = headers.get_all(&name).iter().collect();
            let passed: Vec<&HeaderValue> = forwarded.get_all(&name).iter().collect();
            assert_eq!(sent, passed, "{name}");
        }
    }
}

/// The request through the secure port's router; the body is read to its end.
fn serve(method: Method, uri: Uri, headers: HeaderMap, body: &[u8]) {
    let node = node();
    let shown = uri.to_string();
    let Ok(mut request) = Request::builder()
        .method(method)
        .uri(uri)
        .body(Body::from(body.to_vec()))
    else {
        return;
    };
    *request.headers_mut() = headers;
    node.runtime.block_on(async {
        let response = match node.app.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let read = axum::body::to_bytes(response.into_body(), 16 << 20);
        match tokio::time::timeout(BODY_DEADLINE, read).await {
            Ok(_) => {}
            Err(_) => panic!("{shown}: the response body did not end within {BODY_DEADLINE:?}"),
        }
    });
}

fuzz_target!(|bytes: &[u8]| {
    let mut slots = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Request::new(&mut slots);
    let Ok(httparse::Status::Complete(head_len)) = head.parse(bytes) else {
        return;
    };
    let (Some(method), Some(target)) = (head.method, head.path) else {
        return;
    };
    let Ok(method) = Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let Ok(uri) = target.parse::<Uri>() else {
        return;
    };
    let mut headers = HeaderMap::new();
    for field in head.headers.iter() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(field.name.as_bytes()),
            HeaderValue::from_bytes(field.value),
        ) else {
            return;
        };
        headers.append(name, value);
    }
    check_readers(&method, &uri, &headers);
    serve(method, uri, headers, &bytes[head_len..]);
});

//! The secure port's routes behind its filter, driven as the listener drives them (the peer's
//! identity in the request extensions), without sockets.

use super::*;
use crate::config::Overrides;
use authn::{PeerIdentity, UserInfo};
use axum::body::Body;
use axum::http::Request;
use tower::ServiceExt;

fn node_config(dir: &Path, extra: &str) -> NodeConfig {
    let file = dir.join("config.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nport: 0\n{extra}"),
    )
    .unwrap();
    let overrides = Overrides {
        root_dir: Some(dir.join("root")),
        hostname_override: Some("node-a".into()),
        node_ip: Some("127.0.0.1".into()),
        ..Default::default()
    };
    NodeConfig::load(Some(&file), &overrides).unwrap().0
}

fn server_state(dir: &Path) -> ServerState {
    let health = Arc::new(crate::health::Health::new(
        std::time::Duration::from_secs(300),
        std::time::Duration::from_secs(180),
    ));
    let pressure = Arc::new(crate::eviction::NodePressure::new(false));
    let engine = wasmlet_plugin_host::PluginEngine::new(None).unwrap();
    ServerState {
        store: Arc::new(crate::status::StatusStore::default()),
        health: health.clone(),
        source: tokio::sync::watch::channel(Arc::new(crate::source::SourceSnapshot::default())).1,
        pod_logs_dir: dir.join("logs"),
        plugins: wasmlet_plugin_host::PluginRegistry::new(engine, None),
        metrics: Arc::new(crate::metrics::Metrics::default()),
        pressure: pressure.clone(),
        evictions: Arc::new(crate::eviction::DecisionLog::default()),
        node: Arc::new(crate::node_status::NodeView::new(pressure, health)),
        probe_metrics: Arc::new(crate::prober::metrics::ProbeMetrics::default()),
    }
}

async fn get(app: &Router, path: &str, peer: Option<UserInfo>) -> (StatusCode, String) {
    let mut request = Request::get(path).body(Body::empty()).unwrap();
    request
        .extensions_mut()
        .insert(PeerIdentity(peer.map(Arc::new)));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn standalone_every_route_is_behind_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let config = node_config(dir.path(), "");
    let port = SecurePort::with_reviewers(&config, None).unwrap();
    let extra = Router::new().route(
        "/exec/{*rest}",
        axum::routing::post(|| async { "exec" }).get(|| async { "exec" }),
    );
    let app = port.app(server_state(dir.path()), extra);
    let admin = || Some(UserInfo::new("admin", &["system:masters"]));
    let viewer = || Some(UserInfo::new("viewer", &["ops"]));

    for path in [
        "/pods",
        "/configz",
        "/healthz",
        "/containerLogs/default/p/c",
        "/exec/a/b/c",
        "/nope",
    ] {
        assert_eq!(
            get(&app, path, None).await,
            (StatusCode::UNAUTHORIZED, "Unauthorized".into()),
            "{path}"
        );
    }
    let (status, body) = get(&app, "/pods", admin()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"apiVersion": "v1", "kind": "PodList", "items": [], "metadata": {}})
    );
    let (status, body) = get(&app, "/configz", admin()).await;
    assert_eq!(status, StatusCode::OK);
    let configz: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(configz["kubeletconfig"]["port"], 0);
    assert_eq!(configz["kubeletconfig"]["authorization"]["mode"], "Webhook");
    assert!(
        configz["kubeletconfig"]["tlsCertFile"]
            .as_str()
            .unwrap()
            .ends_with("root/pki/kubelet.crt"),
        "{configz}"
    );
    assert_eq!(
        get(&app, "/exec/a/b/c", admin()).await,
        (StatusCode::OK, "exec".into())
    );
    assert_eq!(get(&app, "/nope", admin()).await.0, StatusCode::NOT_FOUND);
    let (status, body) = get(&app, "/containerLogs/default/p/c", admin()).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::NOT_FOUND, r#"pod "p" does not exist"#)
    );

    assert_eq!(
        get(&app, "/pods", viewer()).await,
        (
            StatusCode::FORBIDDEN,
            "Forbidden (user=viewer, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"
                .into()
        )
    );
    assert_eq!(
        get(&app, "/containerLogs/default/p/c", viewer()).await,
        (
            StatusCode::FORBIDDEN,
            "Forbidden (user=viewer, verb=get, resource=nodes, subresource(s)=[proxy])\n".into()
        )
    );
}

#[tokio::test]
async fn anonymous_requests_when_enabled_are_still_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let config = node_config(dir.path(), "authentication: {anonymous: {enabled: true}}\n");
    let app = SecurePort::with_reviewers(&config, None)
        .unwrap()
        .app(server_state(dir.path()), Router::new());
    assert_eq!(
        get(&app, "/healthz", None).await,
        (
            StatusCode::FORBIDDEN,
            "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n".into()
        )
    );
    let config = node_config(
        dir.path(),
        "authentication: {anonymous: {enabled: true}}\nauthorization: {mode: AlwaysAllow}\n",
    );
    let app = SecurePort::with_reviewers(&config, None)
        .unwrap()
        .app(server_state(dir.path()), Router::new());
    assert_eq!(get(&app, "/pods", None).await.0, StatusCode::OK);
}

/// The listener serves HTTP/1.1 over TLS with upgrades: a handler in `extra` takes the
/// connection over, as exec and port-forward do.
#[tokio::test]
async fn upgrades_pass_through_tls_and_the_filter() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let config = node_config(
        dir.path(),
        "address: 127.0.0.1\nauthentication: {anonymous: {enabled: true}}\nauthorization: {mode: AlwaysAllow}\n",
    );
    let upgrade = |mut request: axum::extract::Request| async move {
        let on_upgrade = hyper::upgrade::on(&mut request);
        tokio::spawn(async move {
            let mut io = hyper_util::rt::TokioIo::new(on_upgrade.await.unwrap());
            let mut buf = [0u8; 4];
            io.read_exact(&mut buf).await.unwrap();
            io.write_all(&buf).await.unwrap();
        });
        axum::response::Response::builder()
            .status(StatusCode::SWITCHING_PROTOCOLS)
            .header("connection", "Upgrade")
            .header("upgrade", "echo")
            .body(Body::empty())
            .unwrap()
    };
    let extra = Router::new().route("/echo", axum::routing::post(upgrade));
    let port = SecurePort::with_reviewers(&config, None).unwrap();
    let (addr, task) = port.serve(server_state(dir.path()), extra).await.unwrap();

    // Trust the node's self-signed certificate (its SANs hold the node IP, 127.0.0.1 here).
    let served = std::fs::read(dir.path().join("root/pki/kubelet.crt")).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::pem::PemObject::from_pem_slice(&served).unwrap())
        .unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(client))
        .connect(name, tcp)
        .await
        .unwrap();
    tls.write_all(b"POST /echo HTTP/1.1\r\nHost: node-a\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 0\r\n\r\n")
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        tls.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    tls.write_all(b"ping").await.unwrap();
    let mut echoed = [0u8; 4];
    tls.read_exact(&mut echoed).await.unwrap();
    assert_eq!(&echoed, b"ping");
    task.abort();
}

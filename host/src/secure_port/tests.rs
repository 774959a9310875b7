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
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["items"],
        serde_json::json!([])
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

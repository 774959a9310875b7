//! The accept loop of the secure port: TCP, then TLS (bounded by a handshake deadline), then
//! HTTP/1.1 with upgrades (exec, attach and port-forward switch protocols on the connection).
//! Each connection is its own task, so a slow or broken client holds only its own; the
//! verified client certificate's user is attached to every request of its connection. The
//! connection cap and header bounds are every port's (`server::limits`).

use super::authn::PeerIdentity;
use super::tls;
use crate::server::limits::{ConnectionCap, Limits};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::debug;

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The remote address of a request's connection, in its extensions (for logs).
#[derive(Debug, Clone, Copy)]
pub struct RemoteAddr(pub SocketAddr);

/// Accepts connections on `listener`, up to the connection cap, for as long as the process
/// runs.
pub async fn accept_loop(listener: TcpListener, tls: Arc<rustls::ServerConfig>, app: Router) {
    let acceptor = TlsAcceptor::from(tls);
    let limits = Limits::default();
    let cap = ConnectionCap::new(&limits);
    loop {
        let Some((tcp, remote, permit)) = cap.accept(&listener, "secure").await else {
            continue;
        };
        let connection =
            serve_connection(tcp, remote, acceptor.clone(), app.clone(), limits.clone());
        tokio::spawn(async move {
            let _permit = permit;
            connection.await;
        });
    }
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    remote: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
    limits: Limits,
) {
    let _ = tcp.set_nodelay(true);
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            debug!(%remote, %error, "secure port: TLS handshake failed");
            return;
        }
        Err(_) => {
            debug!(%remote, "secure port: TLS handshake timed out");
            return;
        }
    };
    let peer = PeerIdentity(
        stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(tls::client_user)
            .map(Arc::new),
    );
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(peer.clone());
        request.extensions_mut().insert(RemoteAddr(remote));
        tower::ServiceExt::oneshot(app.clone(), request.map(axum::body::Body::new))
    });
    let connection = limits
        .http1()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    if let Err(error) = connection.await {
        debug!(%remote, %error, "secure port: connection ended with an error");
    }
}

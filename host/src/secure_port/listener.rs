//! The accept loop of the secure port: TCP, then TLS (bounded by a handshake deadline), then
//! HTTP/1.1 with upgrades (exec, attach and port-forward switch protocols on the connection).
//! Each connection is its own task, so a slow or broken client holds only its own; the
//! verified client certificate's user is attached to every request of its connection.

use super::authn::PeerIdentity;
use super::tls;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A request whose headers have not all arrived by then ends its connection.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The most a request's headers may take (hyper's read buffer); more ends the connection.
const MAX_HEADER_BYTES: usize = 64 * 1024;
/// The most header fields a request may have.
const MAX_HEADERS: usize = 100;

/// The remote address of a request's connection, in its extensions (for logs).
#[derive(Debug, Clone, Copy)]
pub struct RemoteAddr(pub SocketAddr);

/// Accepts connections on `listener` for as long as the process runs.
pub async fn accept_loop(listener: TcpListener, tls: Arc<rustls::ServerConfig>, app: Router) {
    let acceptor = TlsAcceptor::from(tls);
    loop {
        let (tcp, remote) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and such: wait instead of spinning.
                warn!(%error, "secure port: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        tokio::spawn(serve_connection(tcp, remote, acceptor.clone(), app.clone()));
    }
}

async fn serve_connection(
    tcp: tokio::net::TcpStream,
    remote: SocketAddr,
    acceptor: TlsAcceptor,
    app: Router,
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
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES)
        .max_headers(MAX_HEADERS)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    if let Err(error) = connection.await {
        debug!(%remote, %error, "secure port: connection ended with an error");
    }
}

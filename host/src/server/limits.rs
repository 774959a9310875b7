//! The bounds every HTTP port of the node shares: how many connections it holds at once, how
//! long and how large a request's headers may be, so no client (or a thousand of them) can
//! hold the node's memory, file descriptors or tasks. A connection past the cap waits in the
//! kernel's accept backlog until another one ends; an idle keep-alive connection is closed
//! once its next request's headers do not arrive in time.

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bounds of one port.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// A request's headers (the first, or the next on a kept-alive connection) must arrive
    /// within this; otherwise the connection is closed.
    pub header_read_timeout: Duration,
    /// The most bytes a request's headers may take (hyper's read buffer).
    pub max_header_bytes: usize,
    /// The most header fields a request may have.
    pub max_headers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            header_read_timeout: Duration::from_secs(30),
            max_header_bytes: 64 * 1024,
            max_headers: 100,
        }
    }
}

impl Limits {
    /// An HTTP/1.1 server connection builder with these bounds.
    pub fn http1(&self) -> hyper::server::conn::http1::Builder {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_read_timeout)
            .max_header_size(self.max_header_bytes)
            .max_buf_size(self.max_header_bytes.max(8192))
            .max_headers(self.max_headers);
        builder
    }
}

/// Accepts connections up to the cap: the permit travels with the connection's task, so
/// the next accept waits until one ends.
pub struct ConnectionCap {
    permits: Arc<Semaphore>,
}

impl ConnectionCap {
    /// Room for `limits.max_connections` connections at once.
    pub fn new(limits: &Limits) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        }
    }

    /// Waits for room, then for a connection; `None` when the listener failed (logged, with a
    /// pause so a full descriptor table does not spin the loop).
    pub async fn accept(
        &self,
        listener: &TcpListener,
        port: &str,
    ) -> Option<(TcpStream, SocketAddr, OwnedSemaphorePermit)> {
        let permit = self.permits.clone().acquire_owned().await.ok()?;
        match listener.accept().await {
            Ok((tcp, remote)) => Some((tcp, remote, permit)),
            Err(error) => {
                tracing::warn!(port, %error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                None
            }
        }
    }
}

/// Serves `router` over plain HTTP/1.1 on `listener` within `limits`, for as long as the
/// process runs.
pub async fn serve_plain(listener: TcpListener, router: Router, limits: Limits) {
    let cap = ConnectionCap::new(&limits);
    let port = listener
        .local_addr()
        .map_or_else(|_| "?".to_string(), |a| a.to_string());
    loop {
        let Some((tcp, remote, permit)) = cap.accept(&listener, &port).await else {
            continue;
        };
        let router = router.clone();
        let builder = limits.http1();
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                tower::ServiceExt::oneshot(router.clone(), request.map(axum::body::Body::new))
            });
            if let Err(error) = builder.serve_connection(TokioIo::new(tcp), service).await {
                tracing::debug!(%remote, %error, "connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests;

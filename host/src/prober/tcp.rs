//! `tcpSocket` probes: success when a TCP connection to the host (the pod IP by default) and
//! port opens within the timeout; the connection is closed at once.

use super::Outcome;
use std::time::Duration;

/// Dials `host:port` once.
pub async fn probe(host: &str, port: u16, timeout: Duration) -> Outcome {
    match connect(host, port, timeout).await {
        Ok(()) => Outcome::Success,
        Err(message) => Outcome::Failure(message),
    }
}

/// Opens and closes one connection; the error says what was dialled and why it failed.
pub async fn connect(host: &str, port: u16, timeout: Duration) -> Result<(), String> {
    let address = super::http::host_port(host, port);
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&address)).await {
        Ok(Ok(_stream)) => Ok(()),
        Ok(Err(error)) => Err(format!("dial tcp {address}: {error}")),
        Err(_) => Err(format!("dial tcp {address}: i/o timeout after {timeout:?}")),
    }
}

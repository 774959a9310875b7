//! `tcpSocket` probes: success when a TCP connection to the host (the pod IP by default) and
//! port opens within the timeout; the connection is closed at once.

use super::Outcome;
use std::io;
use std::time::Duration;

/// Why a connection did not open; the message is the probe's failure message, as upstream
/// words it.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The connect failed (refused, unreachable, no such host).
    #[error("dial tcp {address}: {source}")]
    Connect {
        /// `host:port` as dialled.
        address: String,
        /// The connect error.
        #[source]
        source: io::Error,
    },
    /// The connection did not open within the probe's timeout.
    #[error("dial tcp {address}: i/o timeout after {timeout:?}")]
    Timeout {
        /// `host:port` as dialled.
        address: String,
        /// The probe's `timeoutSeconds`.
        timeout: Duration,
    },
}

/// Dials `host:port` once.
pub async fn probe(host: &str, port: u16, timeout: Duration) -> Outcome {
    match connect(host, port, timeout).await {
        Ok(()) => Outcome::Success,
        Err(error) => Outcome::Failure(error.to_string()),
    }
}

/// Opens and closes one connection; the error says what was dialled and why it failed.
pub async fn connect(host: &str, port: u16, timeout: Duration) -> Result<(), DialError> {
    let address = super::http::host_port(host, port);
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&address)).await {
        Ok(Ok(_stream)) => Ok(()),
        Ok(Err(source)) => Err(DialError::Connect { address, source }),
        Err(_) => Err(DialError::Timeout { address, timeout }),
    }
}

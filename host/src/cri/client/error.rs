//! What a failed CRI call reports: which RPC, and the runtime's code and reason.

use std::time::Duration;

/// A failed CRI call.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CriError {
    /// The runtime answered with a gRPC error; callers branch on `code` (e.g. NotFound).
    #[error("CRI {rpc} failed: {code:?}: {message}")]
    Rpc {
        /// The RPC's CRI name (`RunPodSandbox`), so a log line says which call failed.
        rpc: &'static str,
        /// The gRPC status code, which callers branch on.
        code: tonic::Code,
        /// The runtime's own explanation.
        message: String,
    },
    /// The runtime did not answer within the call's deadline.
    #[error("CRI {rpc} timed out after {after:?}")]
    Timeout {
        /// The RPC's CRI name.
        rpc: &'static str,
        /// The deadline that passed.
        after: Duration,
    },
    /// No gRPC channel could be set up for the socket.
    #[error("CRI endpoint {endpoint}: {message}")]
    Endpoint {
        /// The socket path as configured.
        endpoint: String,
        /// What was wrong with it.
        message: String,
    },
}

impl CriError {
    /// The gRPC code's name as Go prints it (`Unknown`, `DeadlineExceeded`), for upstream's
    /// `code` label; a missed deadline is `DeadlineExceeded`, a bad endpoint `Unavailable`.
    pub fn code_name(&self) -> String {
        match self {
            CriError::Rpc { code, .. } => format!("{code:?}"),
            CriError::Timeout { .. } => "DeadlineExceeded".into(),
            CriError::Endpoint { .. } => "Unavailable".into(),
        }
    }

    /// The runtime does not know the object (already removed): callers treat it as done.
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            CriError::Rpc {
                code: tonic::Code::NotFound,
                ..
            }
        )
    }

    /// The call (or the command it ran) outlived its deadline.
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            CriError::Rpc {
                code: tonic::Code::DeadlineExceeded,
                ..
            } | CriError::Timeout { .. }
        )
    }

    /// The runtime could not be reached at all, as opposed to refusing the request.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            CriError::Rpc {
                code: tonic::Code::Unavailable,
                ..
            } | CriError::Timeout { .. }
        )
    }
}

//! Every reading the node takes of itself: statvfs of its filesystems, the cgroup v1/v2 memory,
//! CPU and pid counters, /proc, and the runtime's container stats. The eviction manager, GC, the
//! node facts, the Summary API ([`summary`], [`resource_metrics`]) and `/metrics/cadvisor`
//! ([`cadvisor`]) read through here, so that each number is measured one way, the way upstream's
//! kubelet measures it through cadvisor and CRI.
//!
//! Removing pod cgroups is not a reading: it stays with the cgroup manager in [`crate::cgroups`].

pub mod cadvisor;
pub mod cgroup;
pub mod cpu;
pub mod fs;
pub mod housekeeping;
pub mod network;
pub mod node;
pub mod pod;
pub mod psi;
pub mod resource_metrics;
pub mod summary;
pub mod text_format;
pub mod volume_usage;

use crate::cri::CriError;
use std::io;
use std::path::{Path, PathBuf};

/// Why a reading failed, naming the file, cgroup or call it came from.
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    /// A file under /proc or /sys could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: io::Error,
    },
    /// A file was read but lacks a field the reading needs.
    #[error("{} has no {field}", path.display())]
    MissingField {
        /// The file.
        path: PathBuf,
        /// The field it lacks.
        field: &'static str,
    },
    /// A file that holds one number holds something else.
    #[error("{} is not a number", path.display())]
    NotANumber {
        /// The file.
        path: PathBuf,
    },
    /// statvfs of a filesystem failed.
    #[error("statvfs {}: {source}", path.display())]
    Statvfs {
        /// A path on the filesystem.
        path: PathBuf,
        /// The error statvfs returned.
        #[source]
        source: io::Error,
    },
    /// The runtime's `ImageFsInfo` named no mountpoint to measure.
    #[error("the runtime reported no image filesystem")]
    NoImageFs,
    /// A CRI stats call (`ListContainerStats`, `ImageFsInfo`) failed.
    #[error(transparent)]
    Cri(#[from] CriError),
}

/// Reads a whole file, naming it in the error.
fn read(path: &Path) -> Result<String, StatsError> {
    std::fs::read_to_string(path).map_err(|source| StatsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a file that holds one number.
fn read_number(path: &Path) -> Result<u64, StatsError> {
    read(path)?
        .trim()
        .parse()
        .map_err(|_| StatsError::NotANumber {
            path: path.to_path_buf(),
        })
}

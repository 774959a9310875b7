//! The allocations on disk (upstream's `allocated_pods_state` checkpoint), so a restarted node
//! admits its pods with what they were granted, not with a resize still pending in their spec.

use k8s_openapi::api::core::v1::ResourceRequirements;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

/// Each pod's granted resources, by UID and container name.
pub(super) type Granted = HashMap<String, BTreeMap<String, ResourceRequirements>>;

/// The file's name in the node's root directory.
pub const FILE_NAME: &str = "allocated_pods_state";

/// The file's content.
#[derive(serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    version: u32,
    pods: Granted,
}

const VERSION: u32 = 1;

/// Why the checkpoint could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The file exists but cannot be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The checkpoint file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// The file is not a checkpoint of this version.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// The allocations saved at `path`; none when there is no file.
pub(super) fn load(path: &Path) -> Result<Granted, CheckpointError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Granted::new()),
        Err(source) => {
            return Err(CheckpointError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let invalid = |reason: String| CheckpointError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let checkpoint: Checkpoint =
        serde_json::from_slice(&text).map_err(|error| invalid(error.to_string()))?;
    if checkpoint.version != VERSION {
        return Err(invalid(format!(
            "field `version`: {} is not the version this node writes ({VERSION})",
            checkpoint.version
        )));
    }
    Ok(checkpoint.pods)
}

/// Writes `pods` to `path` whole, through a file beside it renamed over it, so a crash leaves
/// the old checkpoint or the new one.
pub(super) fn save(path: &Path, pods: &Granted) -> io::Result<()> {
    let checkpoint = Checkpoint {
        version: VERSION,
        pods: pods.clone(),
    };
    let bytes = serde_json::to_vec(&checkpoint).map_err(io::Error::other)?;
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}

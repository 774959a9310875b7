//! Why `plugin new` or `plugin build` failed: the project's own error, so the project code
//! needs nothing from the other plugin tools (`tool`).

use super::sdk::SdkError;
use std::path::{Path, PathBuf};

/// Why a plugin project could not be written, read or built; names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The project, a file in it, or what its build made at `file` is not usable.
    #[error("{file}: {message}")]
    Project {
        /// The project directory, a file in it, or the component built.
        file: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The project's SDK is missing or unusable; the message says which one to pass.
    #[error(transparent)]
    Sdk(#[from] SdkError),
}

/// The error about `file` (a project directory, a file in it, or a built component).
pub(crate) fn project_error(file: &Path, message: impl Into<String>) -> ProjectError {
    ProjectError::Project {
        file: file.to_path_buf(),
        message: message.into(),
    }
}

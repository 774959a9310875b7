//! Registry credentials from a docker-style `config.json` (`auths.<registry>.auth`, base64
//! `user:password`, or `username`/`password`), as `docker login` writes it. Credential helpers
//! (`credsStore`, `credHelpers`) are not run: the node reads the file only.

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Deserialize, Default)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
}

#[derive(Deserialize, Default)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

/// The default file: `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`, else
/// `/root/.docker/config.json`.
pub fn default_path() -> PathBuf {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Path::new(&dir).join("config.json");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".docker/config.json")
}

/// `https://host:port/v1/` or `host:port` as a docker config key, reduced to `host:port`.
fn host_of(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

/// Why the registry config file gives no credentials; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The file cannot be read (or, named explicitly, does not exist).
    #[error("registry config {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the filesystem said.
        #[source]
        source: std::io::Error,
    },
    /// Not the JSON `docker login` writes.
    #[error("registry config {}: not a docker config.json: {source}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where the JSON is wrong.
        #[source]
        source: serde_json::Error,
    },
    /// The registry's `auth` is not base64 of UTF-8 text.
    #[error("registry config {}: auths.{registry}.auth is not base64 user:password", .path.display())]
    NotBase64 {
        /// The file.
        path: PathBuf,
        /// The registry asked for.
        registry: String,
    },
    /// The registry's `auth` decodes to text without `:`.
    #[error("registry config {}: auths.{registry}.auth is not user:password", .path.display())]
    NotUserPassword {
        /// The file.
        path: PathBuf,
        /// The registry asked for.
        registry: String,
    },
}

/// The credentials for `registry` from `file` (the default file when `None`); anonymous when
/// the default file is missing or names no such registry. A file given explicitly must exist.
pub fn credentials(registry: &str, file: Option<&Path>) -> Result<RegistryAuth, CredentialsError> {
    let (path, explicit) = match file {
        Some(path) => (path.to_path_buf(), true),
        None => (default_path(), false),
    };
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RegistryAuth::Anonymous)
        }
        Err(source) => return Err(CredentialsError::Read { path, source }),
    };
    let config: DockerConfig = match serde_json::from_slice(&text) {
        Ok(config) => config,
        Err(source) => return Err(CredentialsError::Parse { path, source }),
    };
    // Docker Hub's key is its v1 URL; any other registry is keyed by host[:port].
    let wanted = match registry {
        "docker.io" | "index.docker.io" | "registry-1.docker.io" => "index.docker.io",
        other => other,
    };
    let Some(entry) = config
        .auths
        .iter()
        .find_map(|(key, entry)| (host_of(key) == wanted).then_some(entry))
    else {
        return Ok(RegistryAuth::Anonymous);
    };
    if let Some(token) = &entry.registrytoken {
        return Ok(RegistryAuth::Bearer(token.clone()));
    }
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    let Some(auth) = &entry.auth else {
        return Ok(RegistryAuth::Anonymous);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| CredentialsError::NotBase64 {
            path: path.clone(),
            registry: registry.to_string(),
        })?;
    let (user, password) =
        decoded
            .split_once(':')
            .ok_or_else(|| CredentialsError::NotUserPassword {
                path: path.clone(),
                registry: registry.to_string(),
            })?;
    Ok(RegistryAuth::Basic(user.to_string(), password.to_string()))
}

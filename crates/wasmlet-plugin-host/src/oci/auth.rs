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

/// The credentials for `registry` from `file` (the default file when `None`); anonymous when
/// the default file is missing or names no such registry. A file given explicitly must exist.
pub fn credentials(registry: &str, file: Option<&Path>) -> Result<RegistryAuth, String> {
    let (path, explicit) = match file {
        Some(path) => (path.to_path_buf(), true),
        None => (default_path(), false),
    };
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(RegistryAuth::Anonymous)
        }
        Err(e) => return Err(format!("registry config {}: {e}", path.display())),
    };
    let config: DockerConfig = serde_json::from_slice(&text).map_err(|e| {
        format!(
            "registry config {}: not a docker config.json: {e}",
            path.display()
        )
    })?;
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
        .ok_or_else(|| {
            format!(
                "registry config {}: auths.{registry}.auth is not base64 user:password",
                path.display()
            )
        })?;
    let (user, password) = decoded.split_once(':').ok_or_else(|| {
        format!(
            "registry config {}: auths.{registry}.auth is not user:password",
            path.display()
        )
    })?;
    Ok(RegistryAuth::Basic(user.to_string(), password.to_string()))
}

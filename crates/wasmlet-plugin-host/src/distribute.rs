//! Tools for shipping plugins through OCI registries: `wasmlet plugin push`, `pull` and
//! `sign`. Each runs its requests on a small runtime of its own (the CLI has none).

use crate::engine::{sha256_hex, PluginEngine};
use crate::instance::detect_world;
use crate::oci::artifact::{self, ComponentInfo};
use crate::oci::{self, cosign, OciReference, Remote};
use crate::tool::{plugin_error, ToolError};
use std::path::{Path, PathBuf};

pub use crate::oci::RegistryAccess;

fn parse(reference: &str) -> Result<OciReference, ToolError> {
    let text = reference
        .strip_prefix("oci://")
        .ok_or_else(|| ToolError::Registry {
            reference: reference.to_string(),
            message: "expected oci://registry[:port]/repository[:tag|@sha256:<hex>]".into(),
        })?;
    OciReference::parse(text).map_err(|e| ToolError::Registry {
        reference: reference.to_string(),
        message: e.to_string(),
    })
}

fn run<T>(
    reference: &OciReference,
    future: impl std::future::Future<Output = Result<T, oci::OciError>>,
) -> Result<T, ToolError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ToolError::Registry {
            reference: reference.to_string(),
            message: format!("cannot start a runtime: {e}"),
        })?;
    runtime.block_on(future).map_err(ToolError::from)
}

fn remote(reference: &OciReference, access: &RegistryAccess) -> Result<Remote, ToolError> {
    Ok(Remote::new(reference, access)?)
}

/// Pushes the component at `file` to `reference` (a tag) as a CNCF wasm artifact, after
/// checking that it compiles and implements a plugin world. Returns a report to print.
pub fn push_plugin(
    file: &Path,
    reference: &str,
    access: &RegistryAccess,
) -> Result<String, ToolError> {
    let reference = parse(reference)?;
    let fail = |message: String| plugin_error(file, message);
    let wasm = std::fs::read(file).map_err(|e| fail(format!("cannot read: {e}")))?;
    let engine = PluginEngine::new(None).map_err(|e| fail(e.to_string()))?;
    let component = engine
        .load(file, &wasm, &sha256_hex(&wasm), false)
        .map_err(|e| fail(e.to_string()))?;
    let world = detect_world(&component).ok_or_else(|| {
        fail(
            "implements none of the plugin worlds of wasmlet:plugin@0.1.2; refusing to push".into(),
        )
    })?;
    let types = component.component_type();
    let info = ComponentInfo {
        exports: types
            .exports(component.engine())
            .map(|(name, _)| name.to_string())
            .collect(),
        imports: types
            .imports(component.engine())
            .map(|(name, _)| name.to_string())
            .collect(),
        target: Some(format!("wasmlet:plugin/{}@0.1.0", world.as_str())),
    };
    let config = artifact::config(&wasm, &info);
    let remote = remote(&reference, access)?;
    let digest = run(&reference, remote.push(&wasm, &config))?;
    Ok(format!(
        "pushed {reference}\n  digest: {digest}\n  world: {}\n  sha256: {}\n  pin it as {}",
        world.as_str(),
        sha256_hex(&wasm),
        reference.at_digest(&digest),
    ))
}

/// What `plugin pull` fetched.
#[derive(Debug)]
pub struct Pulled {
    /// The manifest digest.
    pub digest: String,
    /// Where the component was written.
    pub file: PathBuf,
    /// The component's sha256 (what a `sha256:` pin names).
    pub sha256: String,
}

/// Pulls `reference` and writes its component to `out` (default: the repository's last path
/// segment `.wasm`, in the current directory), after checking its digests and, with
/// `public_key`, its signature.
pub fn pull_plugin(
    reference: &str,
    out: Option<&Path>,
    public_key: Option<&Path>,
    access: &RegistryAccess,
) -> Result<Pulled, ToolError> {
    let reference = parse(reference)?;
    let remote = remote(&reference, access)?;
    let (digest, wasm) = run(&reference, async {
        let digest = remote.resolve().await?;
        let (_, wasm) = remote.pull(&digest).await?;
        if let Some(key) = public_key {
            oci::check_signature(Some(&remote), None, &reference, &digest, key).await?;
        }
        Ok((digest, wasm))
    })?;
    let file = out.map(Path::to_path_buf).unwrap_or_else(|| {
        let name = reference
            .repository()
            .rsplit('/')
            .next()
            .unwrap_or("plugin");
        PathBuf::from(format!("{name}.wasm"))
    });
    std::fs::write(&file, &wasm).map_err(|e| plugin_error(&file, format!("cannot write: {e}")))?;
    Ok(Pulled {
        digest,
        file,
        sha256: sha256_hex(&wasm),
    })
}

/// Signs the manifest `reference` names (a tag is resolved to its digest first) with the P-256
/// private key in `key`: cosign's encrypted key file (password from `COSIGN_PASSWORD`, empty
/// when unset) or an unencrypted PKCS#8 or SEC1 PEM. The signature goes to the `.sig` tag
/// (`sha256-<hex>.sig`), which every cosign release reads. Returns a report to print.
pub fn sign_plugin(
    reference: &str,
    key: &Path,
    access: &RegistryAccess,
) -> Result<String, ToolError> {
    let reference = parse(reference)?;
    let pem = std::fs::read_to_string(key)
        .map_err(|e| plugin_error(key, format!("cannot read the key: {e}")))?;
    let signing_key = cosign::signing_key(&pem, &cosign::Password::from_env())
        .map_err(|e| plugin_error(key, e.to_string()))?;
    let remote = remote(&reference, access)?;
    let (digest, tag) = run(&reference, async {
        let digest = remote.resolve().await?;
        let tag = remote.sign(&digest, &signing_key).await?;
        Ok((digest, tag))
    })?;
    Ok(format!(
        "signed {}\n  signature: {}:{tag}",
        reference.at_digest(&digest),
        reference.repository_name(),
    ))
}

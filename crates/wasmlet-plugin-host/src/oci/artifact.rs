//! The CNCF wasm OCI artifact layout (TAG Runtime's "Wasm OCI Artifact" spec): an OCI image
//! manifest whose config is `application/vnd.wasm.config.v0+json` and whose one layer is the
//! component, `application/wasm`. What wasmlet pushes, and what it accepts on pull (older
//! tools' `application/vnd.wasm.content.layer.v1+wasm` layer too).

use super::store::digest_of;
use serde::Deserialize;

/// The manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config media type of a wasm artifact.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer's media type.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The layer media type of wasm-to-oci and other older tools.
pub const LEGACY_WASM_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// The docker v2 manifest, which some registries and tools still answer with.
pub const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
/// The largest component wasmlet pulls.
pub const MAX_LAYER_BYTES: u64 = 256 << 20;

/// A descriptor of a manifest's config or layer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Its size in bytes.
    pub size: i64,
    /// Its annotations.
    #[serde(default)]
    pub annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// The parts of an OCI image manifest wasmlet reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// 2.
    pub schema_version: u32,
    /// The layers (the config is not read: its media type varies between tools).
    #[serde(default)]
    pub layers: Vec<Descriptor>,
}

/// Why a manifest is not a plugin artifact wasmlet accepts.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Not JSON of an OCI image manifest.
    #[error("the manifest is not an OCI image manifest: {0}")]
    NotManifest(#[source] serde_json::Error),
    /// A schema version other than 2.
    #[error("the manifest has schemaVersion {0}, not 2")]
    SchemaVersion(u32),
    /// No wasm layer (an image, say): the media types of the layers it has.
    #[error(
        "not a wasm artifact: no {} layer (layers: {})",
        WASM_LAYER_MEDIA_TYPE,
        .0.join(", ")
    )]
    NoWasmLayer(Vec<String>),
    /// More than one wasm layer: which is the plugin is ambiguous.
    #[error("{0} wasm layers; a plugin artifact has one")]
    SeveralWasmLayers(usize),
    /// A layer size past [`MAX_LAYER_BYTES`] (or negative).
    #[error(
        "the wasm layer is {} bytes, more than the {} wasmlet pulls",
        .0,
        MAX_LAYER_BYTES
    )]
    TooLarge(i64),
}

impl Manifest {
    /// Parses a manifest's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, ArtifactError> {
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(ArtifactError::NotManifest)?;
        if manifest.schema_version != 2 {
            return Err(ArtifactError::SchemaVersion(manifest.schema_version));
        }
        Ok(manifest)
    }

    /// The one component layer; refused when there is none, several, or it is too large.
    pub fn wasm_layer(&self) -> Result<&Descriptor, ArtifactError> {
        let wasm: Vec<&Descriptor> = self
            .layers
            .iter()
            .filter(|l| {
                l.media_type == WASM_LAYER_MEDIA_TYPE
                    || l.media_type == LEGACY_WASM_LAYER_MEDIA_TYPE
            })
            .collect();
        let layer = match wasm.as_slice() {
            [one] => *one,
            [] => {
                return Err(ArtifactError::NoWasmLayer(
                    self.layers.iter().map(|l| l.media_type.clone()).collect(),
                ))
            }
            more => return Err(ArtifactError::SeveralWasmLayers(more.len())),
        };
        if layer.size < 0 || layer.size as u64 > MAX_LAYER_BYTES {
            return Err(ArtifactError::TooLarge(layer.size));
        }
        Ok(layer)
    }
}

/// What the config says of the component: its imports, exports and world.
#[derive(Debug, Clone, Default)]
pub struct ComponentInfo {
    /// Interfaces and functions it exports.
    pub exports: Vec<String>,
    /// Interfaces and functions it imports.
    pub imports: Vec<String>,
    /// The world it targets, `wasmlet:plugin/<world>@0.1.0`.
    pub target: Option<String>,
}

/// The config blob for `wasm`.
pub fn config(wasm: &[u8], component: &ComponentInfo) -> Vec<u8> {
    let created = crate::timestamp::rfc3339(std::time::SystemTime::now());
    let config = serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [digest_of(wasm)],
        "component": {
            "exports": component.exports,
            "imports": component.imports,
            "target": component.target,
        },
    });
    serde_json::to_vec(&config).unwrap_or_default()
}

/// The manifest of a wasm artifact made of `config` and `wasm`.
pub fn manifest(config: &[u8], wasm: &[u8]) -> Vec<u8> {
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": {"mediaType": CONFIG_MEDIA_TYPE, "digest": digest_of(config), "size": config.len()},
        "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": digest_of(wasm), "size": wasm.len()}],
    });
    serde_json::to_vec(&manifest).unwrap_or_default()
}

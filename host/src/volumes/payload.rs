//! The payloads of volumes made of API objects, as upstream's `MakePayload` of the
//! `configmap`, `secret` and `projected` volume plugins: every key as a file, or the `items`
//! (key → path, per-item mode); `optional` forgives a missing object or key; modes default to
//! 0644; secret bytes are written as they are.

use super::atomic_writer::FileProjection;
use super::downward::downward_files;
use super::fetch::FetchedObjects;
use super::kind::{ProjectionKind, UNSUPPORTED_PROJECTION};
use super::VolumeProblem;
use crate::objects::TokenRequest;
use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, KeyToPath, Pod, ProjectedVolumeSource, Secret,
    SecretVolumeSource,
};
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// The API's default `defaultMode` of configMap, secret, projected and downward API volumes.
pub(super) const DEFAULT_MODE: u32 = 0o644;

/// A `defaultMode` or item `mode` as file permission bits (the API allows 0..=0777).
pub(super) fn mode_of(mode: Option<i32>) -> u32 {
    mode.map_or(DEFAULT_MODE, |m| (m as u32) & 0o7777)
}

/// Upstream's `validateLocalNonReservedPath`: relative, no `..` element, and nothing that
/// starts with `..` (the writer's own names).
pub(super) fn check_item_path(path: &str) -> Result<(), VolumeProblem> {
    let ok = !path.is_empty()
        && !path.starts_with("..")
        && Path::new(path).is_relative()
        && Path::new(path).components().all(|c| match c {
            Component::Normal(name) => !name.to_string_lossy().starts_with(".."),
            Component::CurDir => true,
            _ => false,
        });
    if ok {
        Ok(())
    } else {
        Err(VolumeProblem::InvalidItemPath { path: path.into() })
    }
}

/// Which object's keys a payload is made of, for the missing-key message.
#[derive(Clone, Copy)]
enum Keys {
    ConfigMap,
    Secret,
}

fn config_map_entries(map: &ConfigMap) -> BTreeMap<&str, &[u8]> {
    let mut entries: BTreeMap<&str, &[u8]> = BTreeMap::new();
    for (key, value) in map.binary_data.iter().flatten() {
        entries.insert(key, &value.0);
    }
    for (key, value) in map.data.iter().flatten() {
        entries.insert(key, value.as_bytes());
    }
    entries
}

fn secret_entries(secret: &Secret) -> BTreeMap<&str, &[u8]> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(key, value)| (key.as_str(), value.0.as_slice()))
        .collect()
}

/// Every key as a file named after it, or only `items`; a key `items` names that the object
/// lacks is an error unless `optional`.
fn key_payload(
    entries: &BTreeMap<&str, &[u8]>,
    items: Option<&[KeyToPath]>,
    default_mode: u32,
    optional: bool,
    keys: Keys,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    let mut files = Vec::new();
    match items.filter(|i| !i.is_empty()) {
        None => {
            for (key, data) in entries {
                check_item_path(key)?;
                files.push(FileProjection::new(*key, *data, default_mode));
            }
        }
        Some(items) => {
            for item in items {
                let Some(data) = entries.get(item.key.as_str()) else {
                    if optional {
                        continue;
                    }
                    return Err(match keys {
                        Keys::ConfigMap => VolumeProblem::MissingConfigMapKey {
                            key: item.key.clone(),
                        },
                        Keys::Secret => VolumeProblem::MissingSecretKey {
                            key: item.key.clone(),
                        },
                    });
                };
                check_item_path(&item.path)?;
                let mode = item.mode.map_or(default_mode, |m| mode_of(Some(m)));
                files.push(FileProjection::new(item.path.clone(), *data, mode));
            }
        }
    }
    Ok(files)
}

fn config_map_files(
    fetched: &FetchedObjects,
    name: &str,
    items: Option<&[KeyToPath]>,
    default_mode: u32,
    optional: bool,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    match fetched.config_map(name) {
        Ok(map) => key_payload(
            &config_map_entries(&map),
            items,
            default_mode,
            optional,
            Keys::ConfigMap,
        ),
        Err(error) if error.is_not_found() && optional => Ok(Vec::new()),
        Err(error) => Err(VolumeProblem::Object(error)),
    }
}

fn secret_files(
    fetched: &FetchedObjects,
    name: &str,
    items: Option<&[KeyToPath]>,
    default_mode: u32,
    optional: bool,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    match fetched.secret(name) {
        Ok(secret) => key_payload(
            &secret_entries(&secret),
            items,
            default_mode,
            optional,
            Keys::Secret,
        ),
        Err(error) if error.is_not_found() && optional => Ok(Vec::new()),
        Err(error) => Err(VolumeProblem::Object(error)),
    }
}

/// The files of a `configMap` volume.
pub(super) fn config_map_volume(
    source: &ConfigMapVolumeSource,
    fetched: &FetchedObjects,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    config_map_files(
        fetched,
        &source.name,
        source.items.as_deref(),
        mode_of(source.default_mode),
        source.optional.unwrap_or(false),
    )
}

/// The files of a `secret` volume.
pub(super) fn secret_volume(
    source: &SecretVolumeSource,
    fetched: &FetchedObjects,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    secret_files(
        fetched,
        source.secret_name.as_deref().unwrap_or(""),
        source.items.as_deref(),
        mode_of(source.default_mode),
        source.optional.unwrap_or(false),
    )
}

/// The files of a `projected` volume: its sources in order (a later source's path wins), every
/// failing source reported, as upstream aggregates them.
pub(super) fn projected_volume(
    pod: &Pod,
    source: &ProjectedVolumeSource,
    fetched: &FetchedObjects,
    node_memory_bytes: i64,
) -> Result<Vec<FileProjection>, VolumeProblem> {
    let default_mode = mode_of(source.default_mode);
    let mut files: BTreeMap<String, FileProjection> = BTreeMap::new();
    let mut problems = Vec::new();
    for projection in source.sources.iter().flatten() {
        let result = match ProjectionKind::of(projection) {
            ProjectionKind::ServiceAccountToken(token) => {
                check_item_path(&token.path).and_then(|()| {
                    let request = TokenRequest::for_projection(pod, token);
                    fetched
                        .token(&request)
                        .map(|t| {
                            vec![FileProjection::new(
                                token.path.clone(),
                                t.token.as_bytes(),
                                default_mode,
                            )]
                        })
                        .map_err(VolumeProblem::Object)
                })
            }
            ProjectionKind::ConfigMap(map) => config_map_files(
                fetched,
                &map.name,
                map.items.as_deref(),
                default_mode,
                map.optional.unwrap_or(false),
            ),
            ProjectionKind::Secret(secret) => secret_files(
                fetched,
                &secret.name,
                secret.items.as_deref(),
                default_mode,
                secret.optional.unwrap_or(false),
            ),
            ProjectionKind::DownwardApi(downward) => downward_files(
                pod,
                downward.items.as_deref().unwrap_or_default(),
                default_mode,
                node_memory_bytes,
            ),
            ProjectionKind::Unsupported => Err(VolumeProblem::Unsupported(UNSUPPORTED_PROJECTION)),
        };
        match result {
            Ok(more) => files.extend(more.into_iter().map(|f| (f.path.clone(), f))),
            Err(problem) => problems.push(problem),
        }
    }
    match problems.len() {
        0 => Ok(files.into_values().collect()),
        1 => Err(problems.remove(0)),
        _ => Err(VolumeProblem::Several(problems)),
    }
}

//! Files the lab reads and writes, all inside the one directory it serves.
//! A name from a request is a path relative to that directory: no root, no
//! `..`, and no symbolic link that leads out of it, however it is spelled.

use std::path::{Component, Path, PathBuf};

use crate::error::ApiError;

/// The longest name a request may give.
pub const MAX_NAME: usize = 4096;

/// `name`'s components, each a plain one, or a 400 naming `field`.
fn plain(field: &str, name: &str) -> Result<PathBuf, ApiError> {
    let refuse = |why: &str| Err(ApiError::bad_request(field, format!("{name:?} {why}")));
    if name.is_empty() || name.len() > MAX_NAME || name.contains('\0') {
        return refuse(&format!("must be a path of 1 to {MAX_NAME} bytes without NUL"));
    }
    let mut path = PathBuf::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir => return refuse("may not use `..`: paths stay inside the lab's directory"),
            Component::RootDir | Component::Prefix(_) => {
                return refuse("must be relative to the lab's directory, not absolute");
            }
        }
    }
    if path.as_os_str().is_empty() {
        return refuse("names no file");
    }
    Ok(path)
}

/// `name` as a file to write inside `root` (canonical), ending in `extension`:
/// its folder must exist inside `root`, and it must not be a link. An
/// existing file is refused (409) unless `overwrite`.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let root = dir.path().canonicalize()?;
/// assert_eq!(lingo_lab::files::to_write(&root, "checkpoint", "dot.ckpt", "ckpt", false)?, root.join("dot.ckpt"));
/// let err = lingo_lab::files::to_write(&root, "checkpoint", "../dot.ckpt", "ckpt", false).unwrap_err();
/// assert_eq!((err.status(), err.field()), (400, "checkpoint"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_write(root: &Path, field: &str, name: &str, extension: &str, overwrite: bool) -> Result<PathBuf, ApiError> {
    let path = plain(field, name)?;
    if path.extension().and_then(|e| e.to_str()) != Some(extension) {
        return Err(ApiError::bad_request(field, format!("{name:?} must end in .{extension}")));
    }
    let folder = root.join(path.parent().unwrap_or(Path::new("")));
    let folder = folder
        .canonicalize()
        .map_err(|e| ApiError::bad_request(field, format!("the folder of {name:?} cannot be used: {e}")))?;
    if !folder.starts_with(root) {
        return Err(ApiError::bad_request(field, format!("{name:?} leads outside the lab's directory")));
    }
    let target = folder.join(path.file_name().expect("a plain path ends in a name"));
    match std::fs::symlink_metadata(&target) {
        Ok(meta) if meta.file_type().is_symlink() || !meta.is_file() => {
            Err(ApiError::bad_request(field, format!("{name:?} is a link or a folder, not a file to write")))
        }
        Ok(_) if !overwrite => Err(ApiError::conflict(field, format!("{name:?} exists; ask to overwrite it"))),
        _ => Ok(target),
    }
}

/// `name` as an existing file to read inside `root` (canonical), links
/// followed only where they stay inside it.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let root = dir.path().canonicalize()?;
/// std::fs::write(root.join("pairs.tsv"), "a\tb\n")?;
/// assert_eq!(lingo_lab::files::to_read(&root, "data", "./pairs.tsv")?, root.join("pairs.tsv"));
/// assert_eq!(lingo_lab::files::to_read(&root, "data", "/etc/passwd").unwrap_err().field(), "data");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_read(root: &Path, field: &str, name: &str) -> Result<PathBuf, ApiError> {
    let path = root.join(plain(field, name)?);
    let real =
        path.canonicalize().map_err(|e| ApiError::bad_request(field, format!("{name:?} cannot be read: {e}")))?;
    if !real.starts_with(root) {
        return Err(ApiError::bad_request(field, format!("{name:?} leads outside the lab's directory")));
    }
    if !real.is_file() {
        return Err(ApiError::bad_request(field, format!("{name:?} is not a file")));
    }
    Ok(real)
}

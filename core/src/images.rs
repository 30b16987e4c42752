//! Local images given to the model: a user's attached file or one the model asks to see
//! with `view_image`, sent inline as a `data:` URL.

use std::path::{Path, PathBuf};

use base64::Engine;

/// The largest image sent (providers refuse larger ones, and it would crowd the context).
pub(crate) const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// Why an image could not be attached; the text is what the model or the user reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The file cannot be read.
    #[error("cannot read image {path}: {cause}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        cause: String,
    },
    /// The file is not a PNG, JPEG, GIF or WebP image.
    #[error("{path} is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage {
        /// The file.
        path: PathBuf,
    },
    /// The file is over the size limit.
    #[error("image {path} is {size} bytes, over the {max}-byte limit")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
}

/// The MIME type of an image, from its first bytes.
fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => Some("image/webp"),
        _ => None,
    }
}

/// Checks, before a run starts, that `path` is an image the model can be given (a readable
/// PNG, JPEG, GIF or WebP file within the size limit); returns its MIME type.
pub fn check_image_file(path: &Path) -> Result<&'static str, ImageError> {
    let bytes = read_image(path)?;
    sniff(&bytes).ok_or_else(|| ImageError::NotAnImage {
        path: path.to_path_buf(),
    })
}

/// The bytes of the image file at `path`: a regular file (a FIFO or a device would block or
/// stream without end) within [`MAX_IMAGE_BYTES`].
fn read_image(path: &Path) -> Result<Vec<u8>, ImageError> {
    let unreadable = |cause: String| ImageError::Unreadable {
        path: path.to_path_buf(),
        cause,
    };
    match keel_apply_patch::read_regular_file(path, MAX_IMAGE_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(unreadable("No such file or directory".to_string())),
        Err(err) if err.kind() == std::io::ErrorKind::FileTooLarge => {
            let size = std::fs::metadata(path).map_or(MAX_IMAGE_BYTES + 1, |meta| meta.len());
            Err(ImageError::TooLarge {
                path: path.to_path_buf(),
                size,
                max: MAX_IMAGE_BYTES,
            })
        }
        Err(err) => Err(unreadable(err.to_string())),
    }
}

/// `path` (relative to `cwd`) as a `data:` URL, checked to be an image within the limit.
pub(crate) fn local_image_data_url(cwd: &Path, path: &Path) -> Result<String, ImageError> {
    let path = cwd.join(path);
    let bytes = read_image(&path)?;
    image_data_url(&path, &bytes)
}

/// `bytes`, read from `path`, as a `data:` URL, checked to be an image.
pub(crate) fn image_data_url(path: &Path, bytes: &[u8]) -> Result<String, ImageError> {
    let mime = sniff(bytes).ok_or_else(|| ImageError::NotAnImage {
        path: path.to_path_buf(),
    })?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(format!("data:{mime};base64,{encoded}"))
}

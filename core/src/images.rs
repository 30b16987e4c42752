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
    use std::io::Read;
    let unreadable = |err: std::io::Error| ImageError::Unreadable {
        path: path.to_path_buf(),
        cause: err.to_string(),
    };
    let size = std::fs::metadata(path).map_err(unreadable)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path: path.to_path_buf(),
            size,
            max: MAX_IMAGE_BYTES,
        });
    }
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|file| file.take(16).read_to_end(&mut head))
        .map_err(unreadable)?;
    sniff(&head).ok_or_else(|| ImageError::NotAnImage {
        path: path.to_path_buf(),
    })
}

/// `path` (relative to `cwd`) as a `data:` URL, checked to be an image within the limit.
pub(crate) fn local_image_data_url(cwd: &Path, path: &Path) -> Result<String, ImageError> {
    let path = cwd.join(path);
    let unreadable = |err: std::io::Error| ImageError::Unreadable {
        path: path.clone(),
        cause: err.to_string(),
    };
    let size = std::fs::metadata(&path).map_err(unreadable)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path,
            size,
            max: MAX_IMAGE_BYTES,
        });
    }
    let bytes = std::fs::read(&path).map_err(unreadable)?;
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

//! `fs/*`: file access for clients that do not share the server's disk.

use std::path::Path;
use std::time::UNIX_EPOCH;

use keel_protocol::app_server::{
    EmptyResponse, FsCopyParams, FsCreateDirectoryParams, FsGetMetadataResponse, FsPathParams,
    FsReadDirectoryEntry, FsReadDirectoryResponse, FsReadFileResponse, FsRemoveParams,
    FsWriteFileParams,
};

use super::paths::require_absolute;
use crate::error::{AppServerError, Result};

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> AppServerError + '_ {
    move |source| AppServerError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// `fs/readFile`: a regular file (never a FIFO, which would block, or a device, which would
/// stream without end) up to the exec-server's `fs/read` limit, so a local and a remote
/// environment answer alike.
pub(crate) async fn fs_read_file(params: FsPathParams) -> Result<FsReadFileResponse> {
    use keel_exec_server::files::MAX_READ_BYTES;
    use keel_protocol::exec_server::{FileReadParams, FileReadResponse};
    require_absolute("fs/readFile", "path", &params.path)?;
    let read = FileReadParams {
        path: params.path.clone(),
        max_bytes: None,
    };
    let answer = tokio::task::spawn_blocking(move || keel_exec_server::files::read(&read))
        .await
        .map_err(|err| AppServerError::Internal(format!("fs/readFile failed: {err}")))?;
    let error = |kind: std::io::ErrorKind, message: String| AppServerError::Io {
        path: params.path.display().to_string(),
        source: std::io::Error::new(kind, message),
    };
    match answer {
        FileReadResponse::Read { data_base64 } => Ok(FsReadFileResponse { data_base64 }),
        FileReadResponse::Missing => Err(error(
            std::io::ErrorKind::NotFound,
            "No such file or directory".to_string(),
        )),
        FileReadResponse::TooLarge { size } => Err(error(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "it is {size} bytes; fs/readFile returns files of at most {MAX_READ_BYTES} bytes"
            ),
        )),
        FileReadResponse::Unreadable { message } => {
            Err(error(std::io::ErrorKind::InvalidInput, message))
        }
    }
}

/// `fs/writeFile`.
pub(crate) async fn fs_write_file(params: FsWriteFileParams) -> Result<EmptyResponse> {
    require_absolute("fs/writeFile", "path", &params.path)?;
    tokio::fs::write(&params.path, params.data_base64.as_bytes())
        .await
        .map_err(io_error(&params.path))?;
    Ok(EmptyResponse {})
}

/// `fs/createDirectory`.
pub(crate) async fn fs_create_directory(params: FsCreateDirectoryParams) -> Result<EmptyResponse> {
    require_absolute("fs/createDirectory", "path", &params.path)?;
    let result = if params.recursive.unwrap_or(true) {
        tokio::fs::create_dir_all(&params.path).await
    } else {
        tokio::fs::create_dir(&params.path).await
    };
    result.map_err(io_error(&params.path))?;
    Ok(EmptyResponse {})
}

fn millis(time: std::io::Result<std::time::SystemTime>) -> i64 {
    time.ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64)
}

/// `fs/getMetadata`.
pub(crate) async fn fs_get_metadata(params: FsPathParams) -> Result<FsGetMetadataResponse> {
    require_absolute("fs/getMetadata", "path", &params.path)?;
    let meta = tokio::fs::metadata(&params.path)
        .await
        .map_err(io_error(&params.path))?;
    Ok(FsGetMetadataResponse {
        is_directory: meta.is_dir(),
        is_file: meta.is_file(),
        created_at_ms: millis(meta.created()),
        modified_at_ms: millis(meta.modified()),
    })
}

/// `fs/readDirectory`.
pub(crate) async fn fs_read_directory(params: FsPathParams) -> Result<FsReadDirectoryResponse> {
    require_absolute("fs/readDirectory", "path", &params.path)?;
    let mut dir = tokio::fs::read_dir(&params.path)
        .await
        .map_err(io_error(&params.path))?;
    let mut entries = Vec::new();
    while let Some(entry) = dir.next_entry().await.map_err(io_error(&params.path))? {
        let kind = entry.file_type().await.map_err(io_error(&params.path))?;
        entries.push(FsReadDirectoryEntry {
            file_name: entry.file_name().to_string_lossy().into_owned(),
            is_directory: kind.is_dir(),
            is_file: kind.is_file(),
        });
    }
    entries.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(FsReadDirectoryResponse { entries })
}

/// `fs/remove`.
pub(crate) async fn fs_remove(params: FsRemoveParams) -> Result<EmptyResponse> {
    require_absolute("fs/remove", "path", &params.path)?;
    let meta = match tokio::fs::symlink_metadata(&params.path).await {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && params.force.unwrap_or(true) => {
            return Ok(EmptyResponse {});
        }
        Err(err) => return Err(io_error(&params.path)(err)),
    };
    let result = if meta.is_dir() {
        if params.recursive.unwrap_or(true) {
            tokio::fs::remove_dir_all(&params.path).await
        } else {
            tokio::fs::remove_dir(&params.path).await
        }
    } else {
        tokio::fs::remove_file(&params.path).await
    };
    result.map_err(io_error(&params.path))?;
    Ok(EmptyResponse {})
}

/// `fs/copy`.
pub(crate) async fn fs_copy(params: FsCopyParams) -> Result<EmptyResponse> {
    require_absolute("fs/copy", "sourcePath", &params.source_path)?;
    require_absolute("fs/copy", "destinationPath", &params.destination_path)?;
    let meta = tokio::fs::metadata(&params.source_path)
        .await
        .map_err(io_error(&params.source_path))?;
    if meta.is_dir() {
        if !params.recursive {
            return Err(AppServerError::InvalidParams {
                method: "fs/copy".into(),
                message: format!(
                    "`{}` is a directory; pass `recursive: true` to copy it",
                    params.source_path.display()
                ),
            });
        }
        let (from, to) = (params.source_path.clone(), params.destination_path.clone());
        tokio::task::spawn_blocking(move || copy_dir(&from, &to))
            .await
            .map_err(|err| AppServerError::Internal(err.to_string()))?
            .map_err(io_error(&params.destination_path))?;
    } else {
        tokio::fs::copy(&params.source_path, &params.destination_path)
            .await
            .map_err(io_error(&params.destination_path))?;
    }
    Ok(EmptyResponse {})
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

// What each of this topic's methods does (the dispatch finds them by method).
handle!(FsReadFile, |_, p| Reply::now(&fs_read_file(p).await?));
handle!(FsWriteFile, |ctx, p| {
    ctx.state.check_client_write("fs/writeFile", &p.path)?;
    Reply::now(&fs_write_file(p).await?)
});
handle!(FsCreateDirectory, |ctx, p| {
    ctx.state
        .check_client_write("fs/createDirectory", &p.path)?;
    Reply::now(&fs_create_directory(p).await?)
});
handle!(FsGetMetadata, |_, p| Reply::now(&fs_get_metadata(p).await?));
handle!(FsReadDirectory, |_, p| Reply::now(
    &fs_read_directory(p).await?
));
handle!(FsRemove, |ctx, p| {
    ctx.state.check_client_write("fs/remove", &p.path)?;
    Reply::now(&fs_remove(p).await?)
});
handle!(FsCopy, |ctx, p| {
    ctx.state
        .check_client_write("fs/copy", &p.destination_path)?;
    Reply::now(&fs_copy(p).await?)
});

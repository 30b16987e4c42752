//! `keel-schema --out DIR`: writes the JSON Schema of every Keel wire type into DIR.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: keel-schema --out DIR";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let out = match (args.next().as_deref(), args.next(), args.next()) {
        (Some("--out"), Some(dir), None) => PathBuf::from(dir),
        (Some("-h" | "--help"), None, None) => {
            println!("{USAGE}\nWrites one schema file per wire type and a bundle into DIR.");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match keel_protocol::schema::write_schema_dir(&out) {
        Ok(()) => {
            eprintln!("wrote JSON Schema to {}", out.display());
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("keel-schema: cannot write {}: {err}", out.display());
            ExitCode::FAILURE
        }
    }
}

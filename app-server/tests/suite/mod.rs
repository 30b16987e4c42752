mod codex_compat;
mod in_process;

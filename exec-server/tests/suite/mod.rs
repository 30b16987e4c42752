mod backpressure;
mod client;
mod escapes;
mod harness;
mod lifecycle;
mod patches;
mod processes;
mod protocol;

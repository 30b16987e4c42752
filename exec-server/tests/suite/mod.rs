mod backpressure;
mod client;
mod harness;
mod lifecycle;
mod processes;
mod protocol;

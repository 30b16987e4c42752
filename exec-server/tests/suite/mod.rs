mod backpressure;
mod client;
mod escapes;
mod harness;
mod lifecycle;
mod processes;
mod protocol;

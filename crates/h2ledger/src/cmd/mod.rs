//! One file per command: each turns its flags into a session and a source, and its result
//! into output.

pub mod calls;
pub mod columnar;
pub mod compare;
pub mod demo;
pub mod explain;
pub mod frames;
pub mod install;
pub mod jobs;
pub mod ledger;
pub mod listing;
pub mod merge;
pub mod replay;
pub mod sniff;
pub mod split;
pub mod workers;

//! The line views, `frames` and `calls`: a record per frame or per call as it is seen, as a
//! table row, a JSON line or an element of one JSON document, then a summary.

mod calls;
mod clock;
pub mod csv;
mod frames;
mod grpc_frames;
mod json;
mod messages;
mod out;
mod ticks;

pub use calls::{CallPrinter, LEGEND};
pub use clock::{Clock, TimeFormat};
pub use frames::{flag_names, FlagNames, FrameFilter, FramePrinter, WIDTH};
pub use grpc_frames::{FrameMessages, FrameMsgs, MAX_STREAMS};
pub use json::{secs, Addrs, CallLine, FrameLine, HeaderJson, TimeMemo};
pub use messages::{table_line, CallMessages, Decoded, Messages, MsgList, MEMORY_CAP};
pub use out::{ColumnSink, Out, Shape, Summary};
pub use ticks::Ticks;

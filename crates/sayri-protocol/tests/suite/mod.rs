mod golden;
mod protocol_doc;
mod round_trip;
mod wire;

mod golden;
mod protocol_doc;
mod protocol_shape;
mod round_trip;
mod wire;

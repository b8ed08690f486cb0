mod protocol_doc;
mod wire;

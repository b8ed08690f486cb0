mod limits;
mod ranges;

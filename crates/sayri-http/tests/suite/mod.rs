mod limits;

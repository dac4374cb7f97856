"""ctorch's operator binding generator: schema model, type mapping, emitters."""

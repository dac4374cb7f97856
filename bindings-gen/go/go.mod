module ctorch

go 1.21

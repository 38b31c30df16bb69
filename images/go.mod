module inference-operator.dev/images

go 1.26.0

.PHONY: demo test
demo:
	bash scripts/demo.sh
test:
	bash scripts/setup.sh && cargo test --release --workspace

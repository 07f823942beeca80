from knowledge.cli import main

main()

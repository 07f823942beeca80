from knowledge.launcher import main

main()

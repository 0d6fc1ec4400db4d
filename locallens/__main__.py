from locallens.cli import main

main()

import java.util.List;
import org.ctorch.lm.*;

public class Chat {
    public static void main(String[] args) {
        List<Message> chat = List.of(Message.system("You are a helpful assistant."),
            Message.user("What is the capital of France?"));
        try (Model model = Model.load(System.getenv("CTORCH_LM_MODEL"));
             Generation answer = model.chat(chat, new GenerateOptions().maxTokens(48))) {
            answer.stream().forEach(piece -> { System.out.print(piece); System.out.flush(); });
            System.out.println("\n" + answer.finishReason());
        }
    }
}

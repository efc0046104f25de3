/** Who a request acts as: the owner of the API key it carried. */
export interface Principal {
  kind: 'user' | 'bot';
  id: string;
  isAdmin: boolean;
  apiKeyId: string;
}
